//! Running a test as a simulation (docs/sim.md): a thread of its own, a current-thread runtime
//! with paused time, the simulated network. Timing-dependent assertions hold the same way on a
//! loaded CI machine as on an idle one, since no wall clock or thread scheduling decides them.

/// Runs `f` as a simulation; a panic inside fails the calling test.
pub fn simulated<F: std::future::Future<Output = ()>>(f: impl FnOnce() -> F + Send + 'static) {
    std::thread::spawn(move || {
        let _net = testkeeper_wire::net::sim::enter();
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(f());
    })
    .join()
    .expect("the simulation panicked");
}
