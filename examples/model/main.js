// A self-hosted "model" for Hangar: answers OpenAI-style chat completions on $HOST:$PORT.
// POST /chat/completions (or /) with {"messages": [{role, content}], "stream"?: true}. The
// "model" reverses the last user message; with stream: true the answer comes as server-sent
// events, one chunk per word, ending with `data: [DONE]`.
const http = require('node:http');
const { randomUUID } = require('node:crypto');

const MODEL = process.env.HANGAR_RESOURCE_NAME || 'reverse';

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function answer(messages) {
  const last = [...messages].reverse().find((m) => m && m.role === 'user');
  return String(last ? last.content : '').split(' ').reverse().join(' ');
}

const server = http.createServer((req, res) => {
  const route = req.url.split('?')[0];
  if (req.method === 'GET' && (route === '/' || route === '/models')) return send(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', owned_by: 'hangar' }] });
  if (req.method !== 'POST' || (route !== '/' && route !== '/chat/completions')) return send(res, 404, { error: { message: `no route ${req.method} ${route}` } });
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, { error: { message: 'body must be JSON' } });
    }
    if (!Array.isArray(body.messages)) return send(res, 400, { error: { message: 'messages must be an array of {role, content}' } });
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const text = answer(body.messages);
    if (!body.stream) {
      return send(res, 200, {
        id, object: 'chat.completion', created, model: MODEL,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage: { prompt_tokens: body.messages.length, completion_tokens: text.split(' ').length, total_tokens: body.messages.length + text.split(' ').length },
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const words = text.split(' ');
    let i = 0;
    const next = () => {
      if (i < words.length) {
        const delta = { content: (i > 0 ? ' ' : '') + words[i++] };
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: MODEL, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
        return setTimeout(next, 5);
      }
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: MODEL, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    next();
  });
});

server.listen(Number(process.env.PORT || 8000), process.env.HOST || '127.0.0.1');
