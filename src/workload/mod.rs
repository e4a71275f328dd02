//! Stage placeholder, filled by later work.
