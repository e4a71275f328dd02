//! What a cgroup's path says about what runs in it (the record's labels, read from the path
//! alone).

pub use crate::model::machine::labels::{Labels, of};
