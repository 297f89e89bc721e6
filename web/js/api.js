// Talks to hearth's HTTP API. Every failure becomes an ApiError whose message is
// plain words for the page: the server's own {"error": ...} text, or
// "Server unreachable" when there was no answer at all.
//
// A server started with --auth-token-file wants `Authorization: Bearer TOKEN` on
// every API request. The token is typed once on login.html and kept in
// sessionStorage (this tab, until it is closed; never a cookie, so no other site
// can make the browser send it); every request here carries it, and a 401 sends
// the page to login.html, which comes back to the refused page afterwards.

const TOKEN_KEY = 'hearth.token';

/** The kept token, or null. */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage refused (a sandboxed frame): no token
  }
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // nothing kept
  }
}

/** Request headers with the token, when one is kept. */
export function authHeaders(extra = {}) {
  const t = getToken();
  return t ? { ...extra, Authorization: `Bearer ${t}` } : extra;
}

/**
 * Where login.html goes after a good token: its ?next= when that is a path of
 * this server ("/..." but not "//host", which would leave it), else the UI's root.
 */
export function loginTarget(search) {
  const next = new URLSearchParams(search).get('next') || '';
  return /^\/(?![\/\\])/.test(next) ? next : '/';
}

/** Leaves for login.html, to come back to this page; the refused token is dropped. */
export function toLogin() {
  clearToken();
  const here = location.pathname + location.search + location.hash;
  location.replace(`/login.html?next=${encodeURIComponent(here)}`);
}

/** HTTP status of a cheap authenticated request with token (null: none); 0 when no answer. */
export async function probe(token) {
  try {
    const res = await fetch('/api/labels', {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      cache: 'no-store',
    });
    return res.status;
  } catch {
    return 0;
  }
}

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status; // 0 = no answer
  }
}

/** URL of an API endpoint with the non-empty params. */
export function apiUrl(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** GETs JSON; throws ApiError. signal aborts a request a newer one replaced. */
export async function getJSON(path, params = {}, signal) {
  let res;
  try {
    res = await fetch(apiUrl(path, params),
      { signal, headers: authHeaders({ Accept: 'application/json' }) });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError('Server unreachable', 0);
  }
  if (res.status === 401) {
    toLogin();
    throw new ApiError('This server wants a token: opening the login page', 401);
  }
  const text = await res.text();
  if (!res.ok) {
    let msg = `${res.status} ${res.statusText}`.trim();
    try {
      const body = JSON.parse(text);
      if (body && body.error) msg = body.error;
    } catch {
      if (res.status >= 502 && res.status <= 504) throw new ApiError('Server unreachable', 0);
      if (text.trim()) msg = text.trim().slice(0, 300);
    }
    throw new ApiError(msg, res.status);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(`The server sent an answer that is not JSON (${path})`, res.status);
  }
}

/**
 * Click handler of an export link (<a download href="/api/...">): a browser's
 * own download sends no Authorization header, so with a token kept the file is
 * fetched here with it and handed over as a blob under the link's download name.
 */
export async function downloadWithToken(e) {
  const a = e.currentTarget;
  if (!getToken()) return; // the plain link works
  e.preventDefault();
  let res;
  try {
    res = await fetch(a.href, { headers: authHeaders() });
  } catch {
    return;
  }
  if (res.status === 401) {
    toLogin();
    return;
  }
  const url = URL.createObjectURL(await res.blob());
  const tmp = document.createElement('a');
  tmp.href = url;
  tmp.download = a.getAttribute('download') || '';
  document.body.append(tmp);
  tmp.click();
  tmp.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
