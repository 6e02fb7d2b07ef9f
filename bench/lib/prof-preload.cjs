// Preloaded (node -r) into the CLI for the profile run: worker processes are spawned with process.execPath,
// and --cpu-prof cannot go through NODE_OPTIONS, so point execPath at a wrapper that adds it.
if (process.env.BENCH_NODE_WRAPPER) process.execPath = process.env.BENCH_NODE_WRAPPER;
