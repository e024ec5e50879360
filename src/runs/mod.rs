//! Stored runs as commands name them: the runs a command reads and compare's sides
//! (`sides`), and runs carried between databases and files (`transfer`).

pub mod sides;
pub mod transfer;
