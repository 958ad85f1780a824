// `context.tools`: the platform's tool set, run by the Python worker's one
// implementation (emulator/runtime/tools/) in the conversation's workspace.
//
// Shaped by `agents.framework` as the Python toolkit shapes `ctx.tools`
// (emulator/runtime/tools/toolkit.py), so both languages hand a framework
// the same kind of tool:
//
// - `openai-agents-sdk`: OpenAI Agents JS function tools (`tool()` of the
//   project's `@openai/agents`), `{type: 'function', name, parameters,
//   invoke, ...}` plus `execute(args)`, for `new Agent({ tools })`;
// - `langgraph`, `deepagents`: LangChain tools (`tool()` of the project's
//   `@langchain/core/tools`), for `ToolNode`, `bindTools`, `createDeepAgent`;
// - anything else: the generic shape Python's LocalTool has: `name`,
//   `description`, `parameters` (JSON schema; also `inputSchema`,
//   `input_schema`), `type: 'tool'`, `metadata`, and `execute(args)` (also
//   `handler`, `invoke`) with `args` an object or its JSON text.
//
// Framework packages come from the project's node_modules (never bundled)
// and only when their shape is asked for. They are loaded with `require`,
// so a project whose own code is ESM holds a second copy of the package:
// the tools work wherever the framework reads tools by shape (it does), but
// `instanceof` against the project's ESM import is false; the helpers that
// take the factory from the caller (`toLangChainTools(tool)`) avoid that.
//
// `toClaudeMcpServer(name?, options?)` is the Claude Agent SDK bundle
// `{ name, tools, allowedTools, alwaysLoad }`: SDK MCP tool definitions
// (`inputSchema` a Zod raw shape built with the project's `zod`, which the
// SDK requires) for `createSdkMcpServer(bundle)` or `createSdkMcpServer({
// name: bundle.name, tools: bundle.tools })`.

import { projectRequire } from './store.mjs';
import { storeError } from './store_client.mjs';

// The Python catalog (tools.specs), loaded when the worker starts: the tools in the
// platform's order, the file and browser groups, and the MCP server name's default and rule.
let catalog = { tools: [], files: [], browser: [], mcpServer: null };

export function setToolSpecs(specs) {
  catalog = specs;
}

/** Python's repr of an argument in an error message, near enough: strings quoted. */
function shown(value) {
  if (typeof value === 'string') return `'${JSON.stringify(value).slice(1, -1)}'`;
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function argumentError(message) {
  return storeError('ToolArgumentError', message);
}

/** A tool result as the text a model reads: JSON unless it is a string (Python's result_text). */
function resultText(result) {
  return typeof result === 'string' ? result : JSON.stringify(result);
}

function isError(result) {
  return result !== null && typeof result === 'object' && !Array.isArray(result)
    && 'error' in result;
}

// --- Zod, for the Claude Agent SDK ------------------------------------------------------
//
// createSdkMcpServer registers each tool with the MCP SDK, which accepts a Zod
// schema or raw shape and nothing else (a JSON schema is refused with
// "inputSchema must be a Zod schema or raw shape"). The catalog's schemas use
// only the keywords below; one more fails loudly here rather than being dropped.

const ZOD_KEYWORDS = new Set(['type', 'description', 'properties', 'required', 'items',
  'additionalProperties', 'enum', 'minimum', 'default']);

function zodOf(z, schema, where) {
  const unknown = Object.keys(schema).filter((key) => !ZOD_KEYWORDS.has(key));
  if (unknown.length) throw new Error(`${where}: no Zod form for JSON schema ${unknown.join(', ')}`);
  let made;
  if (Array.isArray(schema.enum)) made = z.enum(schema.enum);
  else if (schema.type === 'string') made = z.string();
  else if (schema.type === 'integer') made = z.number().int();
  else if (schema.type === 'number') made = z.number();
  else if (schema.type === 'boolean') made = z.boolean();
  else if (schema.type === 'array') made = z.array(schema.items ? zodOf(z, schema.items, where) : z.any());
  else if (schema.type === 'object' && schema.properties) made = z.object(zodShape(z, schema, where));
  else if (schema.type === 'object') {
    const values = schema.additionalProperties;
    made = z.record(z.string(), values && typeof values === 'object' ? zodOf(z, values, where) : z.any());
  } else throw new Error(`${where}: no Zod form for JSON schema type ${shown(schema.type)}`);
  if (typeof schema.minimum === 'number') made = made.min(schema.minimum);
  return made;
}

/** The Zod raw shape of an object schema: optional unless required, described last
 * (the SDK copies a field's own description into its registry; a wrapper's is what it sees). */
function zodShape(z, schema, where) {
  const required = new Set(schema.required ?? []);
  const shape = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    let field = zodOf(z, property, `${where}.${name}`);
    if ('default' in property) field = field.default(property.default);
    else if (!required.has(name)) field = field.optional();
    if (property.description) field = field.describe(property.description);
    shape[name] = field;
  }
  return shape;
}

function alwaysLoadOf(options) {
  if (options === undefined || options === null) return false;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw argumentError(`options must be an object such as { alwaysLoad: true }, not ${shown(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'alwaysLoad' && key !== 'always_load') {
      // read as JavaScript reads an options object (as the store's are): ignored, said once
      warnOnce(`toClaudeMcpServer: option ${shown(key)} is ignored; known: alwaysLoad`);
    }
  }
  const value = options.alwaysLoad ?? options.always_load;
  if (value !== undefined && typeof value !== 'boolean') {
    throw argumentError(`alwaysLoad must be true or false, not ${shown(value)}`);
  }
  return value === true;
}

const warned = new Set();
function warnOnce(message) {
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(`makers-store: ${message}`);
}

// --- the shapes --------------------------------------------------------------------------

function localTool(spec, run) {
  const execute = (args) => run(args);
  return {
    type: 'tool',
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    inputSchema: spec.parameters,
    input_schema: spec.parameters,
    metadata: { runtime: 'makers-store serve', runsLocally: spec.runsLocally },
    execute,
    handler: execute,
    invoke: execute,
  };
}

function openaiTool(requireFramework) {
  const { tool } = requireFramework('@openai/agents');
  return (spec, run) => {
    const made = tool({
      name: spec.name,
      description: spec.description,
      parameters: structuredClone(spec.parameters),
      // strict mode wants every property required; ours has optional ones (as in Python)
      strict: false,
      execute: async (args) => resultText(await run(args)),
    });
    made.execute = (args) => run(args);  // the shape the platform's docs give all()
    return made;
  };
}

function langchainTool(tool) {
  return (spec, run) => tool(async (args) => resultText(await run(args)), {
    name: spec.name, description: spec.description, schema: structuredClone(spec.parameters) });
}

const FRAMEWORK_SHAPES = {
  'openai-agents-sdk': openaiTool,
  langgraph: (requireFramework) => langchainTool(requireFramework('@langchain/core/tools').tool),
  deepagents: (requireFramework) => langchainTool(requireFramework('@langchain/core/tools').tool),
};

export class Toolkit {
  #run;
  #requireFramework;
  #shaped = null;

  constructor(client, runId, { framework = null, projectRoot = process.cwd() } = {}) {
    this.framework = framework;
    this.#requireFramework = projectRequire(projectRoot);
    this.#run = (name, args) => client.call('tools.run', { runId, name, args: args ?? {} });
    // `tools.<name>`: the shaped tool, built on first use as `all()` builds them (not
    // enumerable, so logging the toolkit loads no framework)
    for (const spec of catalog.tools) {
      if (!(spec.name in this)) {
        Object.defineProperty(this, spec.name, { get: () => this.get(spec.name) });
      }
    }
  }

  #tools() {
    if (this.#shaped === null) {
      const shapeFor = FRAMEWORK_SHAPES[this.framework];
      const shape = shapeFor ? shapeFor(this.#requireFramework) : localTool;
      this.#shaped = new Map(catalog.tools.map((spec) => [spec.name,
        shape(spec, (args) => this.#run(spec.name, args))]));
    }
    return this.#shaped;
  }

  /** Every tool, shaped for the framework (synchronous, as on the platform). */
  all() { return [...this.#tools().values()]; }

  get(name) { return this.#tools().get(name); }

  files() { return catalog.files.map((name) => this.#tools().get(name)); }

  browser() { return catalog.browser.map((name) => this.#tools().get(name)); }

  #selected(names) {
    if (names === undefined || names === null) return catalog.tools;
    if (!Array.isArray(names) || !names.every((name) => typeof name === 'string')) {
      throw argumentError(`names must be an array of tool names, not ${shown(names)}`);
    }
    const known = new Map(catalog.tools.map((spec) => [spec.name, spec]));
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length) throw argumentError(`names: no tool named ${unknown.map(shown).join(', ')}`);
    return names.map((name) => known.get(name));
  }

  /** LangChain tools made with the `tool` function the caller passes (its own copy). */
  toLangChainTools(tool, names) {
    if (typeof tool !== 'function') {
      throw argumentError("toLangChainTools: pass LangChain's `tool` function first");
    }
    const make = langchainTool(tool);
    return this.#selected(names).map((spec) => make(spec, (args) => this.#run(spec.name, args)));
  }

  /**
   * CrewAI has no JavaScript SDK: the platform runs `crewai` agents in Python
   * only, where `ctx.tools.to_crewai_tools(BaseTool)` works. Present so that the
   * platform's ToolsContext interface is complete, failing with that reason.
   */
  toCrewAITools() {
    throw storeError('PlatformOnlyError', 'context.tools.toCrewAITools is not available in a '
      + 'Node agent, because CrewAI is Python-only (the platform runs crewai agents in Python): '
      + 'write the agent in Python and call ctx.tools.to_crewai_tools(BaseTool)');
  }

  /**
   * The Claude Agent SDK bundle `{ name, tools, allowedTools, alwaysLoad }`:
   * `createSdkMcpServer(bundle)`, then `mcpServers: { [bundle.name]: server }`
   * and `allowedTools: bundle.allowedTools` (`mcp__<name>__<tool>`).
   */
  toClaudeMcpServer(name, options) {
    const server = name === undefined || name === null ? catalog.mcpServer.defaultName : name;
    if (typeof server !== 'string' || !new RegExp(`^(?:${catalog.mcpServer.namePattern})$`).test(server)) {
      throw argumentError("name must be 1-64 letters, digits, '_' or '-' (an MCP server name), "
        + `not ${shown(name)}`);
    }
    const alwaysLoad = alwaysLoadOf(options);
    // zod is the SDK's peer dependency, so the project's copy is the one the SDK reads
    const z = this.#requireFramework('zod');
    const tools = catalog.tools.map((spec) => ({
      name: spec.name,
      description: spec.description,
      inputSchema: zodShape(z, spec.parameters, spec.name),
      // as the SDK's own tool(name, ..., { alwaysLoad }) marks a tool, so the option holds
      // however the bundle reaches createSdkMcpServer
      ...(alwaysLoad ? { _meta: { 'anthropic/alwaysLoad': true } } : {}),
      handler: async (args) => {
        const result = await this.#run(spec.name, args);
        return { content: [{ type: 'text', text: resultText(result) }], isError: isError(result) };
      },
    }));
    const allowedTools = catalog.tools.map((spec) => `mcp__${server}__${spec.name}`);
    return { name: server, tools, allowedTools, alwaysLoad };
  }
}
