// What the routes open to anyone (/ready, /metrics: probes and scrapers carry no API key) may say about
// this host: no filesystem paths. Engine messages name the socket it could not reach or the checkpoint it
// could not load, and the served model name defaults to --model as given, often a directory; the full
// text stays in the logs.

/**
 * An absolute or home/dot-relative path: a `/` that starts a word (not inside a URL's `//` or a
 * repo id's `org/name`) and what follows up to whitespace or a quote.
 */
const PATH = /(?<![\w/.~-])(?:~|\.{1,2})?\/(?!\/)[^\s'"`,;)]*/g;

/** `connect ENOENT /tmp/ernie-edge-x/engine.sock` → `connect ENOENT <path>`. */
export function redactPaths(text: string): string {
  return text.replace(PATH, '<path>');
}

/**
 * The model name as /metrics labels it: a name that is a filesystem path (`/models/ernie`, `./ernie`,
 * `~/ernie`) becomes its last component; repo ids (`baidu/ERNIE-4.5-0.3B-PT`) and plain names stay.
 */
export function publicModelName(name: string): string {
  if (!/^(?:~|\.{1,2})?\//.test(name)) return name;
  const parts = name.split('/').filter((p) => p !== '' && p !== '.' && p !== '..' && p !== '~');
  return parts.at(-1) ?? 'model';
}
