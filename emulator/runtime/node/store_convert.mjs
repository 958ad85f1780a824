// toOpenAIInput / toAnthropicMessages: synchronous, as on the platform, so
// they run here rather than over the RPC. They follow makers_store/convert.py
// rule for rule (tests/node checks both give the same output for the same
// messages); messages are getMessages results (camelCase) or Python's dicts.

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
  for (const message of messages) {
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
  for (const message of messages) {
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
