// toOpenAIInput / toAnthropicMessages: synchronous, as on the platform, so
// they run here rather than over the RPC. They follow makers_store/convert.py
// rule for rule (tests/node checks both give the same output for the same
// messages); messages are getMessages results (camelCase) or Python's dicts.
// Both guard tool calls as makers_store/lifecycle/history_guard.py does (issue
// 33): an orphan call gets a result saying it was interrupted, right after its
// turn; an orphan or misplaced result is left out; each fix is warned once.
// (Session items of the OpenAI Agents SDK are not converter input and are
// left as they are; Python's strict=True has no counterpart here.)

const INTERRUPTED_RESULT = 'The tool call was interrupted before it returned a result.';
const WARNED_MAX = 10000;
const warned = new Map(); // rule + call id -> true, least recently used first

function isSessionItem(message) {
  const metadata = isObject(message.metadata) ? message.metadata : {};
  return metadata.agent_sdk_session === true || metadata.openai_agents_item === true;
}

function metadataCalls(role, metadata) {
  if (role !== 'assistant' || !Array.isArray(metadata.tool_calls)) return [];
  return metadata.tool_calls.filter((c) => isObject(c) && typeof c.id === 'string').map((c) => c.id);
}

function objectParts(content) {
  if (isObject(content)) return [content];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

function contentCalls(role, content) {
  if (role !== 'assistant') return [];
  return objectParts(content).filter((b) => b.type === 'tool_use' && typeof b.id === 'string').map((b) => b.id);
}

function resultIds(role, content, metadata) {
  const found = [];
  if (role === 'tool') {
    const callId = truthy(metadata.tool_call_id) ? metadata.tool_call_id : metadata.tool_use_id;
    if (typeof callId === 'string' && callId) found.push(callId);
  }
  if (role === 'user' || role === 'tool') {
    for (const b of objectParts(content)) {
      if (b.type === 'tool_result' && typeof b.tool_use_id === 'string') found.push(b.tool_use_id);
    }
  }
  return found;
}

// The doctor's pairing rules (tool_pairing.py's ToolPairing), for the
// messages that are not session items: [rule, positions, call id] findings.
function pairingFindings(messages) {
  let open = new Map(); // call id -> position
  const unanswered = new Map();
  const called = new Set();
  const orphanResults = []; // [call id, position]
  messages.forEach((message, position) => {
    if (isSessionItem(message)) return;
    const [role, content, metadata] = fields(message);
    const answers = resultIds(role, content, metadata);
    if (!answers.length) {
      for (const [id, at] of open) unanswered.set(id, at);
      open = new Map();
    }
    for (const id of answers) {
      if (open.delete(id)) continue;
      if (called.has(id) && !unanswered.has(id)) continue;
      orphanResults.push([id, position]);
    }
    for (const id of [...metadataCalls(role, metadata), ...contentCalls(role, content)]) {
      called.add(id);
      open.set(id, position);
    }
  });
  const late = new Set(orphanResults.filter(([id]) => unanswered.has(id)).map(([id]) => id));
  const findings = [];
  for (const [id, at] of open) findings.push(['orphan-tool-call', [at], id]);
  for (const [id, at] of unanswered) if (!late.has(id)) findings.push(['orphan-tool-call', [at], id]);
  for (const [id, at] of orphanResults) {
    if (late.has(id)) findings.push(['misplaced-tool-result', [unanswered.get(id), at], id]);
    else findings.push(['orphan-tool-result', [at], id]);
  }
  return findings;
}

function warnOnce(rule, callId) {
  const key = `${rule}\u0000${callId}`;
  if (warned.has(key)) { warned.delete(key); warned.set(key, true); return; }
  warned.set(key, true);
  while (warned.size > WARNED_MAX) warned.delete(warned.keys().next().value);
  const fix = rule === 'orphan-tool-result' ? 'the history without the result'
    : 'a result saying the call was interrupted, placed after it';
  console.warn(`makers-store: rule ${rule}: tool call ${JSON.stringify(callId)} does not pair with its `
    + `result; the model gets ${fix} (the stored history is unchanged: makers-store doctor --fix repairs it)`);
}

function withoutResults(message, callIds) {
  const [role, content, metadata] = fields(message);
  const own = truthy(metadata.tool_call_id) ? metadata.tool_call_id : metadata.tool_use_id;
  if (role === 'tool' && callIds.has(own)) return null;
  const answers = (part) => isObject(part) && part.type === 'tool_result' && callIds.has(part.tool_use_id);
  if (isObject(content)) return answers(content) ? null : message;
  if (Array.isArray(content)) {
    const kept = content.filter((part) => !answers(part));
    return kept.length ? { ...message, content: kept } : null;
  }
  return message;
}

function guardHistory(messages) {
  const list = Array.from(messages);
  const findings = pairingFindings(list);
  if (!findings.length) return list;
  const inserts = new Map(); // after position -> messages
  const dropped = new Map(); // position -> call ids
  const drop = (at, id) => { if (!dropped.has(at)) dropped.set(at, new Set()); dropped.get(at).add(id); };
  for (const [rule, positions, id] of findings) {
    if (rule === 'orphan-tool-result') drop(positions[0], id);
    else {
      let end = positions[0];
      while (end + 1 < list.length && !isSessionItem(list[end + 1])
        && resultIds(...fields(list[end + 1])).length) end += 1;
      if (!inserts.has(end)) inserts.set(end, []);
      inserts.get(end).push({
        role: 'tool', content: INTERRUPTED_RESULT,
        metadata: { tool_call_id: id, is_error: true, interrupted: true },
      });
      if (rule === 'misplaced-tool-result') drop(positions[1], id);
    }
    warnOnce(rule, id);
  }
  const out = [];
  list.forEach((message, position) => {
    const kept = dropped.has(position) ? withoutResults(message, dropped.get(position)) : message;
    if (kept !== null) out.push(kept);
    out.push(...(inserts.get(position) ?? []));
  });
  return out;
}

function fields(message) {
  return [String(message.role), message.content, { ...(message.metadata ?? {}) }];
}

// json.dumps as Python writes it (", " and ": " separators, non-ASCII escaped),
// so that a non-text part reads the same text from both languages.
function pythonJson(value) {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function toOpenAIInput(messages) {
  const out = [];
  for (const message of guardHistory(messages)) {
    const [role, content, metadata] = fields(message);
    const item = { role, content };
    if (role === 'assistant' && truthy(metadata.tool_calls)) item.tool_calls = metadata.tool_calls;
    if (role === 'tool') {
      const callId = truthy(metadata.tool_call_id) ? metadata.tool_call_id : metadata.tool_use_id;
      if (truthy(callId)) item.tool_call_id = callId;
    }
    if (typeof metadata.name === 'string' && ['user', 'assistant', 'system'].includes(role)) item.name = metadata.name;
    out.push(item);
  }
  return out;
}

// Python truthiness for JSON values: empty strings, lists and objects are false.
function truthy(value) {
  if (Array.isArray(value)) return value.length > 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function blocks(content) {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (isObject(content)) return [content];
  if (Array.isArray(content)) {
    const out = [];
    for (const part of content) {
      if (typeof part === 'string') { if (part) out.push({ type: 'text', text: part }); }
      else if (isObject(part)) out.push(part);
      else out.push({ type: 'text', text: pythonJson(part) });
    }
    return out;
  }
  return content === null || content === undefined ? [] : [{ type: 'text', text: pythonJson(content) }];
}

function toolUseBlocks(toolCalls) {
  const out = [];
  for (const call of Array.isArray(toolCalls) ? toolCalls : []) {
    const fn = isObject(call) && isObject(call.function) ? call.function : {};
    let args = 'arguments' in fn ? fn.arguments : {};
    if (typeof args === 'string') {
      try { args = args ? JSON.parse(args) : {}; } catch { args = { arguments: args }; }
    }
    if (isObject(call) && truthy(call.id) && truthy(fn.name)) {
      out.push({ type: 'tool_use', id: call.id, name: fn.name, input: args });
    }
  }
  return out;
}

export function toAnthropicMessages(messages) {
  const turns = [];
  for (const message of guardHistory(messages)) {
    let [role, content, metadata] = fields(message);
    if (role === 'system') continue;
    let parts;
    if (role === 'tool') {
      const callId = truthy(metadata.tool_use_id) ? metadata.tool_use_id : metadata.tool_call_id;
      if (truthy(callId)) {
        const result = { type: 'tool_result', tool_use_id: callId };
        const resultBlocks = blocks(content);
        if (resultBlocks.length) result.content = resultBlocks;
        if (truthy(metadata.is_error)) result.is_error = true;
        parts = [result];
      } else parts = blocks(content);
      role = 'user';
    } else {
      parts = blocks(content);
      if (role === 'assistant') parts = parts.concat(toolUseBlocks(metadata.tool_calls));
    }
    if (!parts.length) continue;
    const last = turns[turns.length - 1];
    if (last && last.role === role) {
      const merged = last.content.concat(parts);
      // tool_result blocks must open a user turn (a stable sort, as Python's)
      last.content = [...merged.filter((b) => b.type === 'tool_result'), ...merged.filter((b) => b.type !== 'tool_result')];
    } else turns.push({ role, content: parts });
  }
  for (const turn of turns) { // plain single-text turns read best as strings
    const c = turn.content;
    if (c.length === 1 && c[0].type === 'text' && Object.keys(c[0]).sort().join() === 'text,type') turn.content = c[0].text;
  }
  return turns;
}
