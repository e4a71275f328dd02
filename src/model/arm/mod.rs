//! What an arm, a condition, a backing, a setting and a workload are, as planned and stored:
//! the types are the record's; applying them is `backing`'s, `control`'s and `workload`'s.

pub mod backing;
pub mod condition;
pub mod knob;
pub mod side_by_side;
pub mod spec;
pub mod workload;
