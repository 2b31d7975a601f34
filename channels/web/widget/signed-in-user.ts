/**
 * The signed-in user a site vouches for, read from the widget's script tag at each session
 * start: `data-user-id`, `data-user-hash`, `data-user-ts` (when the hash was issued) and, when the
 * site signs them too, `data-user-email` and `data-user-name`. The widget passes them on as they
 * are: only the service can check the hash (and its age), and it ignores (and logs) an identity
 * it cannot verify.
 */

export interface SignedInUser {
  id: string;
  hash: string;
  ts?: string;
  email?: string;
  name?: string;
}

/**
 * Who the site said the visitor is after the page loaded (the script API's `identify`, or
 * `null` from `reset()` / `identify(null)`: nobody, whatever the script tag says): used over the script tag's.
 */
let identified: SignedInUser | null | undefined;

export function setSignedInUser(user: SignedInUser | null): void {
  identified = user;
}

export function readSignedInUser(siteKey: string): SignedInUser | undefined {
  if (identified !== undefined) return identified ?? undefined;
  const script = Array.from(document.querySelectorAll<HTMLScriptElement>('script[data-site-key]')).find((candidate) => candidate.dataset.siteKey === siteKey);
  const { userId, userHash, userTs, userEmail, userName } = script?.dataset ?? {};
  if (!userId || !userHash) return undefined;
  return {
    id: userId,
    hash: userHash,
    ...(userTs ? { ts: userTs } : {}),
    ...(userEmail ? { email: userEmail } : {}),
    ...(userName ? { name: userName } : {}),
  };
}
