// A floor child that writes its result and then never exits, deaf to SIGTERM:
// what a child deadlocked in process.exit() (nodejs/node#54918) looks like.
process.on('SIGTERM', () => {});
const now = Date.now();
process.stdout.write(`${JSON.stringify({ startedAt: now, listedAt: now + 5, bytes: 42 })}\n`);
setInterval(() => {}, 1_000);
