// A floor child that never writes its result nor exits, deaf to SIGTERM.
process.on('SIGTERM', () => {});
setInterval(() => {}, 1_000);
