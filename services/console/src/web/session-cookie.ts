/** The cookie's name: with the __Secure- prefix the browser refuses it over plain http or without Secure. */
export function cookieName(secure: boolean): string {
  return secure ? "__Secure-subdata_console" : "subdata_console";
}

/** The value of one cookie in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index < 0) continue;
    if (part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it),
 * Secure whenever the page is served over https, scoped to the page's path, and gone when the session ends.
 */
export function sessionCookie(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${name}=${value}; Path=/console; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
}
