// A Hangar agent: an HTTP server on $HOST:$PORT answering POST / {"inputs": "..."} with
// {"output": "..."}. It echoes its input; with an X-Service-Thread-Id header it also remembers
// the earlier turns of that thread and answers with how many it has seen. Without a thread id
// it reads and writes no memory at all.
//
// Memory lives in the platform's thread store, reached through the platform socket with this
// deployment's credential (both in the environment), so a thread survives restarts and new
// revisions. Run outside Hangar (no socket), it keeps threads in this process only.
const http = require('node:http');

const PLATFORM_SOCKET = process.env.HANGAR_PLATFORM_SOCKET;
const PLATFORM_TOKEN = process.env.HANGAR_PLATFORM_TOKEN;
const THREAD_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Calls the platform's thread store; answers the parsed JSON body. */
function threadStore(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath: PLATFORM_SOCKET,
        method,
        path,
        headers: { authorization: `Bearer ${PLATFORM_TOKEN}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode >= 300) reject(new Error(`thread store answered ${res.statusCode}: ${text}`));
          else resolve(JSON.parse(text));
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const localThreads = new Map();

const memory = PLATFORM_SOCKET
  ? {
      async read(threadId) {
        return (await threadStore('GET', `/v1/threads/${threadId}/messages?limit=200`)).messages;
      },
      async append(threadId, messages) {
        await threadStore('POST', `/v1/threads/${threadId}/messages`, { messages });
      },
    }
  : {
      async read(threadId) {
        return localThreads.get(threadId) ?? [];
      },
      async append(threadId, messages) {
        localThreads.set(threadId, [...(localThreads.get(threadId) ?? []), ...messages]);
      },
    };

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function answer(inputs, threadId) {
  const output = `echo: ${inputs}`;
  if (threadId === undefined) return { output };
  const earlier = (await memory.read(threadId)).filter((m) => m.role === 'user').map((m) => m.content);
  await memory.append(threadId, [
    { role: 'user', content: inputs },
    { role: 'assistant', content: output },
  ]);
  return { output, thread: threadId, turns: earlier.length + 1, history: earlier };
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') return send(res, 405, { error: 'POST {"inputs": "..."}' });
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let inputs;
    try {
      inputs = JSON.parse(Buffer.concat(chunks).toString('utf8')).inputs;
    } catch {
      return send(res, 400, { error: 'body must be JSON' });
    }
    if (typeof inputs !== 'string') return send(res, 400, { error: 'inputs must be a string' });
    // A way to show the platform's restart: the process dies, the platform starts it again.
    if (inputs === '__crash__') {
      send(res, 200, { output: 'crashing' });
      setImmediate(() => process.exit(3));
      return;
    }
    const threadId = req.headers['x-service-thread-id'];
    if (threadId !== undefined && (typeof threadId !== 'string' || !THREAD_ID.test(threadId))) {
      return send(res, 400, { error: 'X-Service-Thread-Id must be 1-128 of A-Z a-z 0-9 . _ : -' });
    }
    answer(inputs, threadId).then(
      (body) => send(res, 200, body),
      (err) => send(res, 502, { error: `memory unavailable: ${err.message}` }),
    );
  });
});

server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 8000), process.env.HOST || '127.0.0.1', () => {
  console.log(`agent ${process.env.HANGAR_RESOURCE_NAME || ''} listening on ${process.env.HOST}:${process.env.PORT}`);
});
