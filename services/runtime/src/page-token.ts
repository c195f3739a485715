import { createHmac, timingSafeEqual } from "node:crypto";
import { invalidPageToken } from "./errors.ts";

/** What a page token is bound to: using it with any other method, merchant or filter is refused. */
export interface PageTokenBinding {
  /** The RPC, e.g. "subdata.subscription.v1.SubscriptionService/ListSubscriptions". */
  method: string;
  merchantId: string;
  /** The filter values, by name; empty strings for unset filters. */
  filter: Readonly<Record<string, string>>;
}

/** Where the next page starts: the keyset values of the last row returned (exact text, never a Date). */
export type KeysetPosition = readonly string[];

export interface PageTokenCodec {
  encode(binding: PageTokenBinding, position: KeysetPosition): string;
  /** Throws the INVALID_PAGE_TOKEN ConnectError for anything not made by encode with the same binding. */
  decode(token: string, binding: PageTokenBinding): KeysetPosition;
}

const VERSION = "1";

function bindingText(binding: PageTokenBinding): string {
  const filter = Object.keys(binding.filter)
    .sort()
    .map((name) => `${name}=${binding.filter[name]}`)
    .join("&");
  return `${binding.method}\n${binding.merchantId}\n${filter}`;
}

/**
 * HMAC-SHA256-signed page tokens: base64url(JSON position) "." base64url(mac). The MAC covers the
 * position and the binding, so a token is tamper-evident and useless with other filters or another
 * merchant. The position is not secret (it is the last row's keyset) but clients must treat tokens as
 * opaque.
 *
 * `secret` (SUBDATA_PAGE_TOKEN_SECRET) signs every token; tokens signed with it or with one of `accepted`
 * (SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED) are honoured, so replicas can move to a new secret one by one
 * while the cursors they handed out keep working. A refused token is checked against every secret, so
 * failures all take the same time; a good one stops at the first match (which secret signed it is no
 * secret from whoever holds the token).
 */
export function createPageTokenCodec(secret: string, accepted: readonly string[] = []): PageTokenCodec {
  const macWith = (key: string, binding: PageTokenBinding, payload: string) =>
    createHmac("sha256", key).update(VERSION).update("\n").update(bindingText(binding)).update("\n").update(payload).digest();
  const verifiers = [secret, ...accepted];
  const signedByOneOfUs = (presented: Buffer, binding: PageTokenBinding, payload: string): boolean => {
    for (const key of verifiers) {
      const expected = macWith(key, binding, payload);
      if (presented.length === expected.length && timingSafeEqual(presented, expected)) return true;
    }
    return false;
  };

  return {
    encode(binding, position) {
      const payload = Buffer.from(JSON.stringify(position)).toString("base64url");
      return `${payload}.${macWith(secret, binding, payload).toString("base64url")}`;
    },
    decode(token, binding) {
      const dot = token.indexOf(".");
      if (dot <= 0 || token.length > 2048) throw invalidPageToken();
      const payload = token.slice(0, dot);
      const signature = token.slice(dot + 1);
      const presented = Buffer.from(signature, "base64url");
      // Base64 decoding ignores stray characters and the last character's spare bits, so several
      // spellings decode to one MAC: only the canonical spelling is ours.
      if (presented.toString("base64url") !== signature) throw invalidPageToken();
      if (!signedByOneOfUs(presented, binding, payload)) throw invalidPageToken();
      let position: unknown;
      try {
        position = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      } catch {
        throw invalidPageToken();
      }
      if (!Array.isArray(position) || !position.every((value) => typeof value === "string")) throw invalidPageToken();
      return position as string[];
    },
  };
}
