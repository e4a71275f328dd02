//! What one trial gathered, as stored: the types are the record's; gathering it is
//! `collect`'s and `workload`'s.

pub mod gathered;
pub mod load;
pub mod outcome;
pub mod server;
