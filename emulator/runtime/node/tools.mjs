// `context.tools`: the platform's tool set, run by the Python worker's one
// implementation (emulator/runtime/tools/) in the conversation's workspace.
//
// Each tool is `{ name, description, parameters, execute(args) }` (the result
// is the tool's JSON result; failures are `{ error }` results, not throws).
// `get(name)`, `all()`, `files()`, `browser()`, and
// `toLangChainTools(tool, names?)`, which builds LangChain tools with the
// `tool` function the caller passes (so no LangChain is imported here).

let specs = [];
const FILE_TOOLS = ['files_read', 'files_write', 'files_list', 'files_exists', 'files_remove',
  'files_make_dir'];
const BROWSER_TOOLS = ['browser_fetch', 'browser_screenshot', 'browser_click', 'browser_type',
  'browser_evaluate'];

export function setToolSpecs(list) {
  specs = list;
}

export class Toolkit {
  constructor(client, runId) {
    this.tools = new Map(specs.map((spec) => [spec.name, {
      name: spec.name,
      description: spec.description,
      parameters: spec.parameters,
      execute: (args) => client.call('tools.run', { runId, name: spec.name, args: args ?? {} }),
    }]));
    for (const [name, tool] of this.tools) {
      if (!(name in this)) this[name] = tool;
    }
  }

  get(name) { return this.tools.get(name); }

  all() { return [...this.tools.values()]; }

  files() { return FILE_TOOLS.map((name) => this.tools.get(name)); }

  browser() { return BROWSER_TOOLS.map((name) => this.tools.get(name)); }

  selected(names) {
    if (names === undefined || names === null) return this.all();
    if (!Array.isArray(names)) throw new TypeError('names must be an array of tool names');
    const unknown = names.filter((name) => !this.tools.has(name));
    if (unknown.length) throw new TypeError(`names: no tool named ${unknown.join(', ')}`);
    return names.map((name) => this.tools.get(name));
  }

  toLangChainTools(tool, names) {
    if (typeof tool !== 'function') {
      throw new TypeError("toLangChainTools: pass LangChain's `tool` function first");
    }
    return this.selected(names).map((spec) => tool(async (args) => {
      const result = await spec.execute(args);
      return typeof result === 'string' ? result : JSON.stringify(result);
    }, { name: spec.name, description: spec.description, schema: spec.parameters }));
  }
}
