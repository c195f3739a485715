import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import { addressRange, isPublicAddress } from "../address-policy.ts";

/**
 * The HTTP client webhooks are POSTed with: an undici Agent (keep-alive pools per origin; global fetch
 * measured 10× slower), a total deadline, no redirects (undici's request API does not follow them), a
 * capped response body, and SSRF protection at connect time. The host is resolved here and the address
 * actually connected to is checked, so a name that resolves to a public address at validation time and
 * to 169.254.169.254 later (DNS rebinding) is still refused.
 */

/** Why no usable HTTP response arrived (names as in subdata.webhook.v1.AttemptErrorClass). */
export type TransportErrorClass = "TIMEOUT" | "CONNECTION" | "DNS" | "TLS" | "BLOCKED_ADDRESS";

export type HttpOutcome =
  | { kind: "response"; status: number; retryAfter: string | undefined; body: Buffer }
  | { kind: "error"; errorClass: TransportErrorClass; message: string };

export interface SafeHttpClient {
  /** Never throws for network trouble: returns an "error" outcome with its class. */
  post(url: string, headers: Record<string, string>, body: string): Promise<HttpOutcome>;
  close(): Promise<void>;
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface SafeHttpClientOptions {
  /** SUBDATA_WEBHOOK_ALLOW_PRIVATE: connect to loopback/private/link-local addresses too. */
  allowPrivate: boolean;
  /** Total deadline per request, connect and body included (15 s in production). */
  timeoutMs: number;
  /** Bytes of response body kept; the rest is discarded unread. */
  maxResponseBytes: number;
  /** Name resolution (dns.lookup with all addresses by default; tests inject their own). */
  resolve?: Resolver;
  /** Trusted CA certificates (PEM) instead of Node's bundle: tests and private PKI. */
  ca?: string | string[];
}

const BLOCKED_CODE = "SUBDATA_BLOCKED_ADDRESS";

class BlockedAddressError extends Error {
  readonly code = BLOCKED_CODE;
}

const defaultResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export function createSafeHttpClient(options: SafeHttpClientOptions): SafeHttpClient {
  const resolve = options.resolve ?? defaultResolver;
  const baseConnect = buildConnector({ timeout: options.timeoutMs, ...(options.ca ? { ca: options.ca } : {}) });

  // Runs for every new connection (pooled connections were checked when they were opened).
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const hostname = connectOptions.hostname.replace(/^\[(.*)\]$/, "$1");
    pickAddress(hostname, resolve, options.allowPrivate).then(
      (address) => {
        const servername = connectOptions.servername ?? (isIP(hostname) ? undefined : hostname);
        baseConnect({ ...connectOptions, hostname: address, ...(servername ? { servername } : {}) }, callback);
      },
      (error: Error) => callback(error, null),
    );
  };

  // One Agent per pipeline: keep-alive pools per origin, and no per-origin connection limit — the
  // worker's slots (SUBDATA_WEBHOOK_CONCURRENCY, per-endpoint caps) bound the connections.
  const agent = new Agent({
    connect,
    keepAliveTimeout: 4_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });

  return {
    async post(url, headers, body) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return { kind: "error", errorClass: "CONNECTION", message: "endpoint URL is not a valid URL" };
      }
      if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
        return { kind: "error", errorClass: "CONNECTION", message: `unsupported URL scheme ${parsed.protocol}` };
      }
      const deadline = AbortSignal.timeout(options.timeoutMs);
      try {
        const response = await agent.request({
          origin: parsed.origin,
          path: `${parsed.pathname}${parsed.search}`,
          method: "POST",
          headers,
          body,
          signal: deadline,
        });
        const retryAfter = response.headers["retry-after"];
        return {
          kind: "response",
          status: response.statusCode,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: await readCapped(response.body, options.maxResponseBytes),
        };
      } catch (error) {
        if (deadline.aborted) return { kind: "error", errorClass: "TIMEOUT", message: `no response within ${options.timeoutMs} ms` };
        return { kind: "error", errorClass: classifyError(error), message: describeError(error) };
      }
    },
    async close() {
      await agent.close();
    },
  };
}

/** The first address the policy allows; a name with none is refused as a whole. */
async function pickAddress(hostname: string, resolve: Resolver, allowPrivate: boolean): Promise<string> {
  const addresses = isIP(hostname) ? [hostname] : (await resolve(hostname)).map((entry) => entry.address);
  if (addresses.length === 0) throw Object.assign(new Error(`${hostname} did not resolve`), { code: "ENOTFOUND" });
  if (allowPrivate) return addresses[0]!;
  const allowed = addresses.find(isPublicAddress);
  if (allowed === undefined) {
    const ranges = [...new Set(addresses.map(addressRange))].join(", ");
    throw new BlockedAddressError(`${hostname} resolves only to non-public addresses (${ranges})`);
  }
  return allowed;
}

async function readCapped(stream: AsyncIterable<Buffer> & { destroy(): unknown }, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    chunks.push(chunk.subarray(0, maxBytes - size));
    size += Math.min(chunk.length, maxBytes - size);
    if (size >= maxBytes) {
      // Discarding the rest closes this connection instead of reading an unbounded body.
      stream.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|HOSTNAME_MISMATCH)/;

function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
  }
  return codes;
}

export function classifyError(error: unknown): TransportErrorClass {
  const codes = errorCodes(error);
  if (codes.includes(BLOCKED_CODE)) return "BLOCKED_ADDRESS";
  if (codes.some((code) => code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ENODATA" || code === "EAI_FAIL")) return "DNS";
  if (codes.some((code) => code.startsWith("UND_ERR_") && code.endsWith("_TIMEOUT")) || codes.includes("ETIMEDOUT")) return "TIMEOUT";
  if (codes.some((code) => TLS_CODES.test(code))) return "TLS";
  return "CONNECTION";
}

function describeError(error: unknown): string {
  const codes = errorCodes(error);
  const message = error instanceof Error ? error.message : String(error);
  return codes.length ? `${codes[0]}: ${message}` : message;
}
