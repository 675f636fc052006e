// Static analysis of a parsed chat template (@huggingface/jinja's AST): is it *content-transparent*?
// Then message content can only be copied verbatim into the output — never tested, filtered, called,
// sliced, assigned or passed anywhere — so the render's control flow cannot depend on it, and the
// render of sentinels with the contents put back IS the real render (ChatTemplate.renderSegments then
// renders once instead of twice on every chat request).
//
// Conservative by construction: anything not on the allow-list below makes the answer false (and the
// double render stays). Allowed uses:
//   - `messages` only as the iterable of a `for <name> in messages` (a single loop variable);
//   - that loop variable only as `<name>.role` / `<name>["role"]` (anywhere) or as a content access;
//   - a content access (`X.content` / `X["content"]`, whatever X) only inside an output statement
//     (`{{ … }}` directly in the body of the template, an if or a for), joined to other values by
//     nothing but `+` / `~` string concatenation.
// Example: ERNIE-4.5's `{{- "User: " + message["content"] + "\n" -}}` passes; `message.content|trim`,
// `{% if message.content %}`, `messages|tojson`, `{% set c = message.content %}` do not.

type Node = { type: string; [k: string]: unknown };

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Map) && typeof (v as Node).type === 'string';

/** Every node-valued child of `n`, through arrays and Maps (object literals), in no particular order. */
function children(n: Node): Node[] {
  const out: Node[] = [];
  const take = (v: unknown): void => {
    if (isNode(v)) out.push(v);
    else if (Array.isArray(v)) v.forEach(take);
    else if (v instanceof Map)
      for (const [k, val] of v) {
        take(k);
        take(val);
      }
  };
  for (const [k, v] of Object.entries(n)) if (k !== 'type') take(v);
  return out;
}

function propertyName(m: Node): string | null {
  const p = m.property as Node;
  if (m.computed === true) return p?.type === 'StringLiteral' ? String(p.value) : null;
  return p?.type === 'Identifier' ? String(p.value) : null;
}

const OUTPUT_BODIES: Record<string, string[]> = { Program: ['body'], If: ['body', 'alternate'], For: ['body', 'defaultBlock'] };

export function isContentTransparent(program: unknown): boolean {
  if (!isNode(program)) return false;
  // Output statements: expressions sitting directly in a rendered body.
  const outputs = new Set<Node>();
  const loopVars = new Set<string>();
  const loopIterables = new Set<Node>();
  const parent = new Map<Node, Node>();
  const stack: Node[] = [program];
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const key of OUTPUT_BODIES[n.type] ?? []) {
      const body = n[key];
      if (Array.isArray(body)) for (const s of body) if (isNode(s) && s.type !== 'Set' && isExpression(s)) outputs.add(s);
    }
    if (n.type === 'For') {
      const it = n.iterable as Node;
      if (it?.type === 'Identifier' && it.value === 'messages') {
        if ((n.loopvar as Node)?.type !== 'Identifier') return false;
        loopVars.add(String((n.loopvar as Node).value));
        loopIterables.add(it);
      }
    }
    for (const c of children(n)) {
      parent.set(c, n);
      stack.push(c);
    }
  }
  for (const [n, p] of parent) {
    if (n.type === 'Identifier' && n.value === 'messages' && !loopIterables.has(n)) return false;
    if (n.type === 'Identifier' && loopVars.has(String(n.value))) {
      if (p.type === 'For' && p.loopvar === n) continue;
      if (p.type !== 'MemberExpression' || p.object !== n) return false;
      const name = propertyName(p);
      if (name !== 'role' && name !== 'content') return false;
    }
    if (n.type === 'MemberExpression' && propertyName(n) === 'content' && !inOutput(n, parent, outputs)) return false;
  }
  return true;
}

/** The node, joined upwards only by string concatenation, is (part of) an output statement. */
function inOutput(n: Node, parent: Map<Node, Node>, outputs: Set<Node>): boolean {
  let cur = n;
  for (;;) {
    if (outputs.has(cur)) return true;
    const p = parent.get(cur);
    if (!p || p.type !== 'BinaryExpression') return false;
    const op = (p.operator as { value?: unknown } | undefined)?.value;
    if (op !== '+' && op !== '~') return false;
    cur = p;
  }
}

const EXPRESSIONS = new Set([
  'MemberExpression', 'CallExpression', 'Identifier', 'StringLiteral', 'IntegerLiteral', 'FloatLiteral', 'ArrayLiteral',
  'TupleLiteral', 'ObjectLiteral', 'BinaryExpression', 'FilterExpression', 'SelectExpression', 'TestExpression',
  'UnaryExpression', 'SliceExpression', 'Ternary', 'Literal', 'Expression',
]);
const isExpression = (n: Node) => EXPRESSIONS.has(n.type);
