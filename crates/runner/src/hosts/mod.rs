//! Everything about several hosts together: lab stacks on other hosts (`--host`) and what a
//! run keeps of them, and one test or sweep run from many agent hosts (`--agents`): their
//! flags, their start through ssh, their parts added into one report and one interval log.

pub mod across;
pub mod agent;
pub mod agent_flags;
pub mod facts;
pub mod fleet;
pub mod merge;
pub mod session;
pub mod sweep_agents;
