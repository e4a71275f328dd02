//! Where a warm trial's server comes from: the schedule that runs every server, the replica
//! and the lifetime the trial runs in.

use crate::experiment::servers::{Seat, ServerSchedule};

/// Where a trial's server comes from: the schedule, the replica (0 without replicas) and the
/// lifetime it runs in (warm design; every replica's lifetimes are numbered apart).
pub(in crate::experiment) struct ServerSlot<'s> {
    pub schedule: &'s mut dyn ServerSchedule,
    pub lifetime: Option<usize>,
    pub replica: usize,
}

impl<'s> ServerSlot<'s> {
    /// Replica `replica`'s slot in the run's lifetime `lifetime` when `replicas` run at once:
    /// every replica's lifetimes are numbered apart (`lifetime·replicas + replica`).
    pub fn of_replica(
        schedule: &'s mut dyn ServerSchedule,
        lifetime: Option<usize>,
        (replica, replicas): (usize, usize),
    ) -> Self {
        ServerSlot {
            schedule,
            lifetime: lifetime.map(|l| l * replicas + replica),
            replica,
        }
    }

    pub fn seat(&self, arm: usize) -> Seat {
        Seat {
            replica: self.replica,
            arm,
        }
    }
}
