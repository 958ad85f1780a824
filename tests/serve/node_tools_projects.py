"""Node projects that hand ``context.tools.all()`` to each framework, as the
platform's Node docs do, one project per ``agents.framework`` (the shape is
the project's). Each ``POST /shape`` answers what it saw as JSON.

``node_modules`` is linked to ``tests/node/project``'s (OpenAI Agents JS,
LangChain, LangGraph) by the test.
"""

from __future__ import annotations

import json

_PACKAGE = json.dumps({"name": "node-tools-shapes", "private": True, "type": "module"})


def _project(framework: str | None, agent: str) -> dict[str, str]:
    agents = {} if framework is None else {"framework": framework}
    return {"package.json": _PACKAGE, "edgeone.json": json.dumps({"agents": agents}),
            "agents/shape.ts": agent}


OPENAI_AGENT = """
    // new Agent({ tools: context.tools.all() }) with a model that writes, reads, then answers.
    import { Agent, run, setTracingDisabled, Usage } from '@openai/agents';

    setTracingDisabled(true);  // no network

    const call = (name: string, args: object, id: string) => ({ usage: new Usage(), output: [
      { type: 'function_call', callId: id, name, arguments: JSON.stringify(args),
        status: 'completed' }] });

    class WriteThenRead {
      async getResponse(request: any) {
        const input: any[] = Array.isArray(request.input) ? request.input : [];
        const results = input.filter((item) => item.type === 'function_call_result');
        if (results.length === 0) {
          return call('files_write', { path: '/oa/x.txt', content: 'from openai' }, 'w');
        }
        if (results.length === 1) return call('files_read', { path: '/oa/x.txt' }, 'r');
        const last = results[results.length - 1].output;
        const text = typeof last === 'string' ? last : last.text;
        return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', id: 'm',
          status: 'completed', content: [{ type: 'output_text', text: `read: ${text}` }] }] };
      }

      async *getStreamedResponse(): AsyncGenerator<never> {
        throw new Error('not streamed here');
      }
    }

    export async function onRequest(context: any): Promise<Response> {
      const tools = context.tools.all();
      const agent = new Agent({ name: 'shape', instructions: 'Use the tools.', tools,
        model: new WriteThenRead() });
      const result = await run(agent, 'write then read');
      const outputs = result.newItems
        .filter((item: any) => item.type === 'tool_call_output_item')
        .map((item: any) => item.output);
      const first = tools[0];
      return Response.json({
        kinds: [...new Set(tools.map((t: any) => t.type))],
        names: tools.map((t: any) => t.name),
        documented: ['type', 'name', 'parameters', 'execute'].filter((key) => key in first),
        strict: first.strict,
        final: result.finalOutput,
        outputs,
        executed: await context.tools.files_exists.execute({ path: '/oa/x.txt' }),
      });
    }
"""

LANGGRAPH_AGENT = """
    // ToolNode(context.tools.all()), and toLangChainTools with the project's own `tool`.
    import { AIMessage } from '@langchain/core/messages';
    import { StructuredTool, tool } from '@langchain/core/tools';
    import { ToolNode } from '@langchain/langgraph/prebuilt';

    const ask = (name: string, args: object, id: string) => ({
      messages: [new AIMessage({ content: '', tool_calls: [{ name, args, id }] })] });

    export async function onRequest(context: any): Promise<Response> {
      const tools = context.tools.all();
      const node = new ToolNode(tools);
      const wrote = await node.invoke(
        ask('files_write', { path: '/lg/x.txt', content: 'graph' }, 'w'));
      const read = await node.invoke(ask('files_read', { path: '/lg/x.txt' }, 'r'));
      const [made] = context.tools.toLangChainTools(tool, ['files_read']);
      return Response.json({
        count: tools.length,
        namespaces: [...new Set(tools.map((t: any) => t.lc_namespace.join('/')))],
        wrote: wrote.messages[0].content,
        read: read.messages[0].content,
        factoryMadeInstance: made instanceof StructuredTool,
        viaFactory: await made.invoke({ path: '/lg/x.txt' }),
      });
    }
"""

GENERIC_AGENT = """
    // The generic shape, as a template without a framework reads it, and the sandbox's
    // platform-only properties.
    function failure(read: () => unknown): string | null {
      try {
        read();
        return null;
      } catch (error: any) {
        return `${error.name}: ${error.message}`;
      }
    }

    export async function onRequest(context: any): Promise<Response> {
      const { tools, sandbox } = context;
      const write = tools.get('files_write');
      const wrote = await write.execute('{"path": "/g/x.txt", "content": "generic"}');
      const read = await tools.files_read.invoke({ path: '/g/x.txt' });
      const screenshot = tools.browser_screenshot;
      return Response.json({
        keys: Object.keys(write).sort(),
        type: write.type,
        sameSchema: write.parameters === write.inputSchema
          && write.inputSchema === write.input_schema,
        sameCall: write.execute === write.handler && write.handler === write.invoke,
        attribute: tools.files_write === write,
        metadata: [write.metadata, screenshot.metadata],
        files: tools.files().map((t: any) => t.name),
        browser: tools.browser().map((t: any) => t.name),
        wrote, read,
        shot: await screenshot.execute({ url: 'https://example.com' }),
        errors: {
          names: failure(() => tools.toLangChainTools(() => null, 'files_read')),
          unknown: failure(() => tools.toLangChainTools(() => null, ['nope'])),
          factory: failure(() => tools.toLangChainTools()),
          crewai: failure(() => tools.toCrewAITools(class {})),
          cdpUrl: failure(() => sandbox.browser.cdpUrl),
          liveUrl: failure(() => sandbox.browser.liveUrl),
          envdAccessToken: failure(() => sandbox.envdAccessToken),
        },
        sandboxKeys: Object.keys(sandbox).sort(),
        browserKeys: Object.keys(sandbox.browser).sort(),
      });
    }
"""

SHAPE_PROJECTS = {
    "openai-agents-sdk": _project("openai-agents-sdk", OPENAI_AGENT),
    "langgraph": _project("langgraph", LANGGRAPH_AGENT),
    "deepagents": _project("deepagents", LANGGRAPH_AGENT),
    "none": _project(None, GENERIC_AGENT),
}
