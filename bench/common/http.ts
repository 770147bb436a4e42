import http from 'node:http';

export interface HttpResponse {
  status: number;
  body: string;
}

/**
 * A minimal HTTP/1.1 client over keep-alive connections. The load generator shares the machine
 * with the server it measures, so it should cost as little per request as possible: plain
 * node:http, no fetch (undici's streams and header objects are more work per request).
 */
export class HttpClient {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(baseUrl: string, maxSockets: number) {
    this.url = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          host: this.url.hostname,
          port: this.url.port,
          method,
          path,
          headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The request, failing unless it answers `status` (the body is in the error, for a clear bench failure). */
  async expect(status: number, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<HttpResponse> {
    const response = await this.request(method, path, headers, body);
    if (response.status !== status) {
      throw new Error(`${method} ${path} answered ${response.status}, expected ${status}: ${response.body.slice(0, 300)}`);
    }
    return response;
  }

  close(): void {
    this.agent.destroy();
  }
}
