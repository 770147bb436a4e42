import { useEffect, useRef, useState } from 'preact/hooks';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import type { Session } from '../api';

interface TerminalMessage {
  type: 'output' | 'error';
  data?: string;
}

/** The relay's address on base_url: a browser's WebSocket cannot send the credential, which goes as the first message. */
function relayUrl(session: Session, sandbox: string, cols: number, rows: number): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = new URLSearchParams({ workspace: session.workspace, sandbox, cols: String(cols), rows: String(rows) });
  return `${scheme}//${location.host}/console/sandbox-terminal?${query}`;
}

/** An interactive shell in the sandbox (its API's `/terminal/ws`), drawn by xterm.js. */
export function SandboxTerminal({ session, sandbox }: { session: Session; sandbox: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState('connecting');
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const terminal = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 14, screenReaderMode: true });
    const fit = new FitAddon();
    terminal.loadAddon(fit);
    terminal.open(element);
    fit.fit();
    const socket = new WebSocket(relayUrl(session, sandbox, terminal.cols, terminal.rows));
    socket.onopen = () => {
      socket.send(JSON.stringify({ type: 'auth', token: session.credential }));
      setStatus('connected');
      terminal.focus();
    };
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data)) as TerminalMessage;
      if (message.type === 'output') terminal.write(message.data ?? '');
      else setStatus(`error: ${message.data ?? ''}`);
    };
    socket.onclose = (event) => setStatus((s) => (s.startsWith('error') ? s : event.code === 1000 ? 'the shell exited' : `closed (${event.code})`));
    const typed = terminal.onData((data) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: 'input', data })));
    const resized = terminal.onResize(({ cols, rows }) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: 'resize', cols, rows })));
    const refit = () => fit.fit();
    addEventListener('resize', refit);
    return () => {
      removeEventListener('resize', refit);
      typed.dispose();
      resized.dispose();
      socket.close();
      terminal.dispose();
    };
  }, [session, sandbox]);
  return (
    <section aria-labelledby="terminal-title" class="terminal">
      <h2 id="terminal-title">Terminal</h2>
      <p aria-live="polite" data-terminal-status={status}>
        {status}
      </p>
      <div ref={holder} class="terminal-screen" />
    </section>
  );
}
