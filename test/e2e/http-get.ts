// A test client: one HTTP GET, printed as one JSON line:
// {"status":200,"contentType":"...","nosniff":"...","body":"..."} or {"error":"refused"}.
// Runs inside a client namespace, as a load balancer's probe would.
// Usage: node http-get.ts URL [TIMEOUT_MS]

const [url, timeoutText = '2000'] = process.argv.slice(2);
try {
  const res = await fetch(url!, { signal: AbortSignal.timeout(Number(timeoutText)) });
  const body = await res.text();
  console.log(
    JSON.stringify({
      status: res.status,
      contentType: res.headers.get('content-type'),
      nosniff: res.headers.get('x-content-type-options'),
      body,
    }),
  );
} catch (e) {
  const code = (e as { cause?: { code?: string } }).cause?.code;
  console.log(JSON.stringify({ error: code === 'ECONNREFUSED' ? 'refused' : (code ?? (e as Error).name) }));
}
