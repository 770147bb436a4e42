// A Hangar agent: an HTTP server on $HOST:$PORT answering POST / {"inputs": "..."} with
// {"output": "..."}. It echoes its input; with an X-Service-Thread-Id header it also remembers
// the earlier turns of that thread and answers with how many it has seen. Without a thread id
// it reads and writes no memory at all.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const MEMORY_DIR = process.env.AGENT_MEMORY_DIR || '/tmp/agent-threads';
const THREAD_ID = /^[A-Za-z0-9._-]{1,128}$/;

function threadFile(threadId) {
  return path.join(MEMORY_DIR, `${threadId}.json`);
}

function readThread(threadId) {
  try {
    return JSON.parse(fs.readFileSync(threadFile(threadId), 'utf8'));
  } catch {
    return [];
  }
}

function writeThread(threadId, turns) {
  fs.mkdirSync(MEMORY_DIR, { recursive: true });
  fs.writeFileSync(threadFile(threadId), JSON.stringify(turns));
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
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
    if (threadId === undefined) return send(res, 200, { output: `echo: ${inputs}` });
    if (typeof threadId !== 'string' || !THREAD_ID.test(threadId)) return send(res, 400, { error: 'X-Service-Thread-Id must be 1-128 of A-Z a-z 0-9 . _ -' });
    const turns = readThread(threadId);
    turns.push(inputs);
    writeThread(threadId, turns);
    send(res, 200, { output: `echo: ${inputs}`, thread: threadId, turns: turns.length, history: turns.slice(0, -1) });
  });
});

server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 8000), process.env.HOST || '127.0.0.1', () => {
  console.log(`agent ${process.env.HANGAR_RESOURCE_NAME || ''} listening on ${process.env.HOST}:${process.env.PORT}`);
});
