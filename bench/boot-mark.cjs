// Preloaded (node --require) into the agent by bench/agent-child.ts: the
// moment node's own start-up is done and user code begins, on stderr.
process.stderr.write(`knp-bench-boot ${Date.now()}\n`);
