// Talks to hearth's HTTP API. Every failure becomes an ApiError whose message is
// plain words for the page: the server's own {"error": ...} text, or
// "Server unreachable" when there was no answer at all.

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
    res = await fetch(apiUrl(path, params), { signal, headers: { Accept: 'application/json' } });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError('Server unreachable', 0);
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
