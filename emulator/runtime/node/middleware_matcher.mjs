// `config.matcher` of a project's middleware, turned into the list serve's front tests.
//
// The platform's rules (its CLI, edgeone 1.4.9): no matcher, or an empty array,
// means every path (`/:path*`); a string or an object with `source` is one entry,
// an array several. `*` and `/*` mean everything. Any other entry is a path
// pattern with path-to-regexp 6's syntax (`/about`, `/chat/:path*`,
// `/file{.:ext}?`, `/user/(\d+)`), anchored at both ends and not strict (one
// trailing slash allowed); an entry that is not a valid pattern is used as a
// regular expression as written (`/api/.*`, `^/user/\d+$`), unanchored. The
// platform tests the expression without flags, so matching is case-sensitive.
// An expression JavaScript cannot compile matches only the path equal to the
// entry. This module writes its own pattern compiler, to the same grammar.

const DELIMITERS = '/#?';
const PREFIXES = './';
const EVERYTHING = '^/.*$';

function escapeRegex(text) {
  return text.replace(/[.+*?=^!:${}()[\]|/\\]/g, '\\$&');
}

const DEFAULT_SEGMENT = `[^${escapeRegex(DELIMITERS)}]+?`;

/** The pattern's lexemes: [kind, value, index]. Throws TypeError on a malformed one. */
function lex(pattern) {
  const lexemes = [];
  let at = 0;
  while (at < pattern.length) {
    const char = pattern[at];
    if (char === '*' || char === '+' || char === '?') {
      lexemes.push(['modifier', char, at]);
      at += 1;
    } else if (char === '\\') {
      lexemes.push(['escaped', pattern[at + 1], at]);
      at += 2;
    } else if (char === '{' || char === '}') {
      lexemes.push([char === '{' ? 'open' : 'close', char, at]);
      at += 1;
    } else if (char === ':') {
      let end = at + 1;
      while (end < pattern.length && /[A-Za-z0-9_]/.test(pattern[end])) end += 1;
      if (end === at + 1) throw new TypeError(`a parameter name is missing at ${at}`);
      lexemes.push(['name', pattern.slice(at + 1, end), at]);
      at = end;
    } else if (char === '(') {
      let depth = 1;
      let end = at + 1;
      let body = '';
      if (pattern[end] === '?') throw new TypeError(`a group cannot start with "?" at ${end}`);
      while (end < pattern.length) {
        if (pattern[end] === '\\') {
          body += pattern[end] + (pattern[end + 1] ?? '');
          end += 2;
          continue;
        }
        if (pattern[end] === ')') {
          depth -= 1;
          if (depth === 0) {
            end += 1;
            break;
          }
        } else if (pattern[end] === '(') {
          depth += 1;
          if (pattern[end + 1] !== '?') throw new TypeError(`a capturing group at ${end}`);
        }
        body += pattern[end];
        end += 1;
      }
      if (depth) throw new TypeError(`an unbalanced group at ${at}`);
      if (!body) throw new TypeError(`an empty group at ${at}`);
      lexemes.push(['group', body, at]);
      at = end;
    } else {
      lexemes.push(['char', char, at]);
      at += 1;
    }
  }
  lexemes.push(['end', '', at]);
  return lexemes;
}

/** The pattern as literal strings and parameters ({prefix, suffix, pattern, modifier}). */
function parse(pattern) {
  const lexemes = lex(pattern);
  const parts = [];
  let position = 0;
  let literal = '';
  const take = (kind) => {
    if (lexemes[position][0] === kind) return lexemes[position++][1];
    return undefined;
  };
  const expect = (kind) => {
    const value = take(kind);
    if (value !== undefined) return value;
    const [found, , index] = lexemes[position];
    throw new TypeError(`unexpected ${found} at ${index}, expected ${kind}`);
  };
  const text = () => {
    let out = '';
    for (let piece = take('char') ?? take('escaped'); piece !== undefined;
      piece = take('char') ?? take('escaped')) out += piece;
    return out;
  };
  const flush = () => {
    if (literal) parts.push(literal);
    literal = '';
  };
  while (position < lexemes.length) {
    const char = take('char');
    const name = take('name');
    const group = take('group');
    if (name !== undefined || group !== undefined) {
      let prefix = char ?? '';
      if (!PREFIXES.includes(prefix)) {
        literal += prefix;
        prefix = '';
      }
      flush();
      parts.push({ prefix, suffix: '', pattern: group ?? DEFAULT_SEGMENT,
        modifier: take('modifier') ?? '' });
      continue;
    }
    const plain = char ?? take('escaped');
    if (plain !== undefined) {
      literal += plain;
      continue;
    }
    flush();
    if (take('open') !== undefined) {
      const prefix = text();
      const named = take('name') ?? '';
      const inner = take('group') ?? '';
      const suffix = text();
      expect('close');
      parts.push({ prefix, suffix, pattern: named && !inner ? DEFAULT_SEGMENT : inner,
        modifier: take('modifier') ?? '' });
      continue;
    }
    expect('end');
  }
  return parts;
}

/** The regular expression's source for a path pattern: anchored, one trailing slash allowed. */
export function patternSource(pattern) {
  let source = '^';
  for (const part of parse(pattern)) {
    if (typeof part === 'string') {
      source += escapeRegex(part);
      continue;
    }
    const prefix = escapeRegex(part.prefix);
    const suffix = escapeRegex(part.suffix);
    if (!part.pattern) {
      source += `(?:${prefix}${suffix})${part.modifier}`;
    } else if (!prefix && !suffix) {
      source += `(${part.pattern})${part.modifier}`;
    } else if (part.modifier === '+' || part.modifier === '*') {
      const repeated = `(?:${suffix}${prefix}(?:${part.pattern}))*`;
      source += `(?:${prefix}((?:${part.pattern})${repeated})${suffix})${
        part.modifier === '*' ? '?' : ''}`;
    } else {
      source += `(?:${prefix}(${part.pattern})${suffix})${part.modifier}`;
    }
  }
  return `${source}[${escapeRegex(DELIMITERS)}]?$`;
}

/**
 * The matcher list: [{source, regex, equals}] where `regex` is the expression
 * (JavaScript syntax) a path is tested against, or null when JavaScript cannot
 * compile it and `equals` (the entry itself) is what the path must be.
 */
export function normalizeMatcher(matcher) {
  let entries = matcher;
  if (entries === undefined || entries === null || (Array.isArray(entries) && !entries.length)) {
    entries = ['/:path*'];
  }
  if (!Array.isArray(entries)) entries = [entries];
  const list = [];
  for (const entry of entries) {
    const source = typeof entry === 'string' ? entry : entry?.source;
    if (typeof source !== 'string' || !source) continue;
    let regex;
    if (source === '*' || source === '/*') {
      regex = EVERYTHING;
    } else {
      try {
        regex = patternSource(source);
      } catch {
        regex = source;
      }
    }
    try {
      new RegExp(regex);
      list.push({ source, regex, equals: null });
    } catch {
      list.push({ source, regex: null, equals: source });
    }
  }
  // entries that are neither a string nor an object with a source: the platform
  // then has an empty list, which it runs on every path
  return list.length ? list : [{ source: '*', regex: EVERYTHING, equals: null }];
}

/** Whether `pathname` is one the list covers (the platform's test, for the host's own check). */
export function covers(list, pathname) {
  return list.some((entry) => (entry.regex === null
    ? pathname === entry.equals : new RegExp(entry.regex).test(pathname)));
}
