import { lookup } from "node:dns/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema, ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import ipaddr from "ipaddr.js";
import { addressRange, isPublicAddress } from "../address-policy.ts";

/**
 * Checks an endpoint URL when it is created or changed, so a merchant learns at once that a target will
 * be refused. This is early feedback, not the guard: DNS can change after this check (rebinding), so the
 * delivery side checks every address again when it connects.
 */
export interface UrlPolicy {
  /** Resolves with the normalised URL, or throws INVALID_ARGUMENT with reason URL_REFUSED naming `field`. */
  check(url: string, field: string): Promise<string>;
}

/** All addresses a host name resolves to (IPv4 and IPv6). Tests inject their own. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

export interface UrlPolicyOptions {
  /** SUBDATA_WEBHOOK_ALLOW_PRIVATE: plain http and private, loopback and link-local targets allowed. */
  allowPrivate: boolean;
  resolveHost?: ResolveHost;
}

const MAX_URL_LENGTH = 2048;

const resolveWithDns: ResolveHost = async (hostname) => {
  const addresses = await lookup(hostname, { all: true, verbatim: true });
  return addresses.map((entry) => entry.address);
};

/** The error every refusal uses: a stable reason plus the field at fault. */
function urlRefused(field: string, description: string): ConnectError {
  return new ConnectError(`${field}: ${description}`, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.URL_REFUSED, fieldViolations: [{ field, description }] } },
  ]);
}

export function createUrlPolicy(options: UrlPolicyOptions): UrlPolicy {
  const resolveHost = options.resolveHost ?? resolveWithDns;
  return {
    async check(text, field) {
      if (text === "") throw urlRefused(field, "is required");
      if (text.length > MAX_URL_LENGTH) throw urlRefused(field, `must be at most ${MAX_URL_LENGTH} characters`);
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        throw urlRefused(field, "must be an absolute http(s) URL");
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") throw urlRefused(field, "must use https");
      if (url.protocol === "http:" && !options.allowPrivate) throw urlRefused(field, "must use https");
      if (url.username !== "" || url.password !== "") throw urlRefused(field, "must not contain credentials");
      if (url.hash !== "") throw urlRefused(field, "must not contain a fragment");
      // The WHATWG parser has already turned 2130706433, 0177.0.0.1 and 0x7f.0.0.1 into 127.0.0.1.
      const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
      if (host === "") throw urlRefused(field, "must name a host");
      const normalised = url.toString();
      if (normalised.length > MAX_URL_LENGTH) throw urlRefused(field, `must be at most ${MAX_URL_LENGTH} characters`);
      if (options.allowPrivate) return normalised;

      const addresses = ipaddr.isValid(host) ? [host] : await resolve(resolveHost, host, field);
      for (const address of addresses) {
        if (!isPublicAddress(address)) {
          throw urlRefused(field, `targets a non-public address (${addressRange(address)}); webhooks go to public hosts only`);
        }
      }
      return normalised;
    },
  };
}

async function resolve(resolveHost: ResolveHost, host: string, field: string): Promise<string[]> {
  let addresses: string[];
  try {
    addresses = await resolveHost(host);
  } catch {
    throw urlRefused(field, `host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw urlRefused(field, `host ${host} does not resolve`);
  return addresses;
}
