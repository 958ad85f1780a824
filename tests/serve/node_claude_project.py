"""A TypeScript Claude Agent SDK project, in the call style the platform's Node
templates use, written for these tests.

- ``POST /chat`` runs one turn with ``query()``: the platform's tools through
  ``context.tools.toClaudeMcpServer()`` and ``createSdkMcpServer``, the
  conversation's Claude session through ``context.store.claudeSessionStore()``,
  ``claudeSessionBinding`` and ``getSessionInfo`` (resume or start), the user's
  message and the reply kept with ``appendMessage`` under ids the client chose.
  It streams ``text_delta``, ``tool_call``, ``tool_result`` and a final ``done``.
  The Claude Code CLI is the one ``CLAUDE_CLI_PATH`` (in ``context.env``) names.
- ``POST /stop`` stops the run of the conversation named in the body.
- ``POST /history`` (a cloud function) reads the messages back with
  ``context.agent.store.getMessages`` from ``await context.request.json()``.
- ``POST /mcp_probe`` feeds the bundle to ``createSdkMcpServer`` and talks to
  that server with the MCP SDK's own client, without the CLI.

``node_modules`` is linked to ``tests/node/claude-project``'s by the test.
"""

from __future__ import annotations

import json

NODE_CLAUDE_PROJECT = {
    "package.json": json.dumps({
        "name": "node-claude-agent", "private": True, "type": "module",
        "dependencies": {"@anthropic-ai/claude-agent-sdk": "0.3.335",
                         "@modelcontextprotocol/sdk": "^1.29.0", "zod": "^4.0.0"},
    }),
    "edgeone.json": json.dumps({"agents": {"framework": "claude-agent-sdk", "timeout": 300}}),
    "agents/_cli.ts": """
        // What the Claude Code CLI gets: the gateway in Anthropic's terms (the CLI adds
        // /v1/messages itself), writable folders, and only the variables it needs.
        const PASSED = ['PATH', 'HOME', 'IS_SANDBOX', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
          'DISABLE_TELEMETRY', 'CLAUDE_CONFIG_DIR'];

        export function cliEnvironment(env: Record<string, string | undefined>) {
          const out: Record<string, string> = {
            ANTHROPIC_BASE_URL: (env.AI_GATEWAY_BASE_URL ?? '').replace(/\\/v1\\/?$/, ''),
            ANTHROPIC_API_KEY: env.AI_GATEWAY_API_KEY ?? '',
            CLAUDE_CODE_TMPDIR: env.CLAUDE_CODE_TMPDIR ?? '/tmp',
          };
          for (const name of PASSED) {
            const value = env[name];
            if (value !== undefined) out[name] = value;
          }
          return out;
        }

        export function sseFrame(event: string, data: unknown): string {
          return `event: ${event}\\ndata: ${JSON.stringify(data)}\\n\\n`;
        }
    """,
    "agents/chat.ts": """
        import { createSdkMcpServer, getSessionInfo, query } from '@anthropic-ai/claude-agent-sdk';
        import { cliEnvironment, sseFrame } from './_cli';

        type Body = { message?: string; message_id?: string; user_id?: string };

        /**
         * The SDK's messages until `signal` fires. After its abortController fires the SDK
         * waits 2 s for the CLI to exit before it ends the query (and keeps streaming
         * meanwhile), so the loop stops at the signal instead of waiting for that.
         */
        async function* untilStopped<T>(source: AsyncIterable<T>, signal: AbortSignal) {
          const iterator = source[Symbol.asyncIterator]();
          const stopped = new Promise<null>((done) => {
            if (signal.aborted) done(null);
            signal.addEventListener('abort', () => done(null), { once: true });
          });
          for (;;) {
            const next = iterator.next();
            next.catch(() => {});  // after a stop it rejects with the SDK's "aborted by user"
            const step = await Promise.race([next, stopped]);
            if (step === null || step.done) return;
            yield step.value;
          }
        }

        /** Resume the conversation's Claude session when the store holds its transcript. */
        async function sessionOptions(store: any, sessionStore: any, conversationId: string) {
          const bound = await store.claudeSessionBinding(conversationId);
          const sessionId: string = typeof bound === 'string' ? bound : bound.sessionId;
          const info = await getSessionInfo(sessionId, { dir: process.cwd(), sessionStore });
          return info ? { resume: sessionId } : { sessionId };
        }

        export async function onRequest(context: any): Promise<Response> {
          const { store, request, env } = context;
          const conversationId: string = context.conversation_id;
          const body = (request.body ?? {}) as Body;
          const message = body.message ?? '';
          if (!conversationId || !message) {
            return Response.json({ error: 'makers-conversation-id and message are required' },
              { status: 400 });
          }
          await store.appendMessage({ conversationId, role: 'user', content: message,
            messageId: body.message_id, userId: body.user_id });

          const sessionStore = store.claudeSessionStore();
          const session = await sessionOptions(store, sessionStore, conversationId);
          const bundle = context.tools.toClaudeMcpServer();
          const platformTools = createSdkMcpServer({ name: bundle.name, tools: bundle.tools,
            alwaysLoad: true });
          const stopper = new AbortController();
          const signal = request.signal as AbortSignal;
          signal.addEventListener('abort', () => stopper.abort(), { once: true });

          async function* turn(): AsyncGenerator<string> {
            let reply = '';
            let stopped = false;
            try {
              const messages = query({
                prompt: message,
                options: {
                  model: env.AI_GATEWAY_MODEL ?? 'claude-e2e',
                  pathToClaudeCodeExecutable: env.CLAUDE_CLI_PATH,
                  cwd: process.cwd(),
                  env: cliEnvironment(env),
                  systemPrompt: 'You are a test agent.',
                  tools: [],
                  mcpServers: { [bundle.name]: platformTools },
                  allowedTools: bundle.allowedTools,
                  sessionStore,
                  ...session,
                  includePartialMessages: true,
                  maxTurns: 6,
                  abortController: stopper,
                },
              });
              for await (const item of untilStopped(messages as AsyncIterable<any>, signal)) {
                if (item.type === 'stream_event' && item.event.type === 'content_block_delta'
                    && item.event.delta.type === 'text_delta') {
                  reply += item.event.delta.text;
                  yield sseFrame('text_delta', { delta: item.event.delta.text });
                } else if (item.type === 'assistant') {
                  for (const block of item.message.content) {
                    if (block.type !== 'tool_use') continue;
                    yield sseFrame('tool_call', { name: block.name });
                  }
                } else if (item.type === 'user' && Array.isArray(item.message.content)) {
                  for (const block of item.message.content) {
                    if (block.type !== 'tool_result') continue;
                    const parts = Array.isArray(block.content) ? block.content : [];
                    const text = typeof block.content === 'string' ? block.content
                      : parts.map((part: any) => part.text ?? '').join('');
                    yield sseFrame('tool_result', { text, is_error: block.is_error === true });
                  }
                }
              }
            } catch (error) {
              if (!signal.aborted) yield sseFrame('error', { message: String(error) });
            }
            stopped = signal.aborted;
            if (reply) {
              await store.appendMessage({ conversationId, role: 'assistant', content: reply,
                messageId: body.message_id ? `${body.message_id}-reply` : undefined,
                userId: body.user_id });
            }
            yield sseFrame('done', { stopped });
          }

          const frames = turn();
          const encoder = new TextEncoder();
          return new Response(new ReadableStream({
            async pull(controller) {
              const { value, done } = await frames.next();
              if (done) controller.close();
              else controller.enqueue(encoder.encode(value));
            },
            async cancel() { await frames.return(undefined); },
          }), { headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' } });
        }
    """,
    "agents/stop.ts": """
        // The conversation to stop is named in the body: a stop carries no conversation header.
        export async function onRequest(context: any): Promise<Response> {
          const target = context.request.body?.conversation_id;
          if (typeof target !== 'string' || target === '') {
            return Response.json({ error: 'conversation_id is required' }, { status: 400 });
          }
          const result = context.utils.abortActiveRun(target);
          return Response.json({ state: result.aborted ? 'stopping' : 'idle', ...result });
        }
    """,
    "cloud-functions/history.ts": """
        export async function onRequestPost(context: any): Promise<Response> {
          const asked = await context.request.json();
          const messages = await context.agent.store.getMessages({
            conversationId: asked.conversation_id, userId: asked.user_id, limit: 100, order: 'asc',
          });
          return Response.json({
            conversation_id: asked.conversation_id,
            messages: messages.map((m: any) => ({ id: m.messageId, role: m.role,
              text: m.content })),
          });
        }
    """,
    "agents/mcp_probe.ts": """
        // The bundle as the SDK's createSdkMcpServer takes it, asked by a real MCP client.
        import { createSdkMcpServer } from '@anthropic-ai/claude-agent-sdk';
        import { Client } from '@modelcontextprotocol/sdk/client/index.js';
        import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';

        function failure(call: () => unknown): string | null {
          try {
            call();
            return null;
          } catch (error: any) {
            return `${error.name}: ${error.message}`;
          }
        }

        export async function onRequest(context: any): Promise<Response> {
          const { tools } = context;
          const plain = tools.toClaudeMcpServer();
          const bundle = tools.toClaudeMcpServer('edgeone', { alwaysLoad: true });
          const server = createSdkMcpServer(bundle);
          const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
          await server.instance.connect(serverEnd);
          const client = new Client({ name: 'probe', version: '1.0.0' });
          await client.connect(clientEnd);
          const listed = await client.listTools();
          const call = (name: string, args: Record<string, unknown>) =>
            client.callTool({ name, arguments: args });
          const wrote = await call('files_write', { path: '/probe/a.txt', content: 'probed' });
          const read = await call('files_read', { path: '/probe/a.txt' });
          const missing = await call('files_read', { path: '/probe/none.txt' });
          const invalid = await call('files_read', {});
          await client.close();
          return Response.json({
            plain: { name: plain.name, allowedTools: plain.allowedTools,
              alwaysLoad: plain.alwaysLoad, meta: plain.tools[0]._meta ?? null },
            bundle: { name: bundle.name, alwaysLoad: bundle.alwaysLoad, type: server.type },
            listed: listed.tools.map((t: any) => ({ name: t.name, inputSchema: t.inputSchema,
              meta: t._meta ?? null })),
            wrote, read, missing, invalid,
            errors: {
              name: failure(() => tools.toClaudeMcpServer('edge one')),
              newline: failure(() => tools.toClaudeMcpServer('edgeone\\n')),
              alwaysLoad: failure(() => tools.toClaudeMcpServer('x', { alwaysLoad: 'yes' })),
              options: failure(() => tools.toClaudeMcpServer('x', 'yes')),
              crewai: failure(() => tools.toCrewAITools(class {})),
            },
            named: tools.toClaudeMcpServer('my-tools').allowedTools[0],
          });
        }
    """,
}
