"""One TypeScript Makers project per Node framework family, written for these
tests in the call styles the platform's Node templates use (facts about them:
``/work/shared/spec/node-templates.md``). :mod:`.test_node_framework_e2e`
serves each at ``--instances 3`` against the fake gateway of
:mod:`.fake_tool_model` on loopback.

Every project answers:

- ``POST /chat`` with ``{message, message_id, user_id}`` and the
  ``makers-conversation-id`` header: one turn, streamed as a ``start`` frame
  (``{run_id}``, the run's ``context.run_id``), ``text_delta`` frames and a
  final ``done`` (``{stopped}``). The user's message and the reply are kept
  with ``appendMessage({conversationId, role, content, messageId, userId})``
  under the client's id (the reply's id is ``<message_id>-reply``).
- ``POST /chat/stop`` with ``{conversation_id}`` and no conversation header,
  as the templates' frontends send it: ``context.utils.abortActiveRun``.
- ``POST /history`` (a cloud function) with ``{conversation_id, user_id}``:
  the messages read back through ``context.agent.store.getMessages``.

The families:

- ``langgraph``: a LangGraph.js ``StateGraph`` (model node + ``ToolNode``) on
  ``ChatOpenAI`` from ``@langchain/openai`` pointed at the gateway, the
  thread in ``context.store.langgraphCheckpointer`` (thread id = the
  conversation id), the platform's tools through
  ``context.tools.toLangChainTools(tool)``; ``{action: "delete"}`` deletes the
  thread (``deleteThread``) and the messages. Its cloud function reads the
  already-parsed ``context.request.body``.
- ``deepagents``: ``createDeepAgent`` on the same model with the checkpointer
  and ``context.store.langgraphStore``, ``/memories/`` routed to a DeepAgents
  ``StoreBackend`` (per user) and everything else kept in the thread's state,
  the platform's ``web_search`` through ``toLangChainTools(tool, ['web_search'])``,
  ``context.run_id`` in the run's metadata. Its cloud function calls
  ``await context.request.json()``.
- ``openai-agents``: OpenAI Agents JS on ``OpenAIChatCompletionsModel`` with a
  tool that needs approval. A run that stops for approval saves
  ``result.state.toString()`` with ``context.store.state.set`` and answers an
  ``approval_required`` frame; ``{action: "approve"|"reject"}`` on the next
  request (any instance) loads it with ``RunState.fromString``, decides, and
  finishes the run. The conversation's items (``result.history``) are kept in
  ``context.store.state`` too. Its cloud function reads ``context.request.body``.

``node_modules`` is linked to ``tests/node/project``'s by the test.
"""

from __future__ import annotations

import json

SSE_HELPER = """
    // Server-sent events from an async generator of frames, as the templates write them.
    export function sseFrame(event: string, data: unknown): string {
      return `event: ${event}\\ndata: ${JSON.stringify(data)}\\n\\n`;
    }

    export function sseResponse(frames: AsyncGenerator<string>): Response {
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

    export type ChatBody = {
      message?: string; message_id?: string; user_id?: string; action?: string;
    };

    /** The reply's id: the client's id of the message it answers, with `-reply`. */
    export function replyId(body: ChatBody): string | undefined {
      return body.message_id ? `${body.message_id}-reply` : undefined;
    }
"""

# The conversation to stop is named in the body: a stop carries no conversation header.
STOP_AGENT = """
    export async function onRequest(context: any): Promise<Response> {
      const body = context.request.body;
      const target = body && typeof body === 'object'
        ? body.conversation_id ?? body.conversationId : undefined;
      if (typeof target !== 'string' || target === '') {
        return Response.json({ error: 'conversation_id is required' }, { status: 400 });
      }
      const result = context.utils.abortActiveRun(target);
      return Response.json({
        status: result.aborted ? 'aborting' : 'idle',
        conversation_id: result.conversation_id || target,
        run_id: result.run_id,
        aborted: result.aborted,
      });
    }
"""

# The model every family uses: LangChain's ChatOpenAI at the AI gateway.
LANGCHAIN_MODEL = """
    import { ChatOpenAI } from '@langchain/openai';

    export function gatewayModel(env: Record<string, string | undefined>): ChatOpenAI {
      return new ChatOpenAI({
        model: env.AI_GATEWAY_MODEL ?? '@makers/deepseek-v4-flash',
        apiKey: env.AI_GATEWAY_API_KEY,
        configuration: { baseURL: env.AI_GATEWAY_BASE_URL },
        // no `streaming: true`: streamMode 'messages' streams the tokens anyway, and with it
        // a call outside a stream counts tokens with tiktoken, fetched from the network
        maxRetries: 0,
      });
    }

    /** The text of a streamed AI message chunk (tool results and calls carry none). */
    export function chunkText(chunk: any): string {
      if (chunk?.getType?.() !== 'ai') return '';
      return typeof chunk.content === 'string' ? chunk.content : chunk.text ?? '';
    }
"""


def _history(read_body: str) -> str:
    return f"""
    export async function onRequestPost(context: any): Promise<Response> {{
      const asked = {read_body};
      const conversationId = asked?.conversation_id;
      if (typeof conversationId !== 'string' || conversationId === '') {{
        return Response.json({{ error: 'conversation_id is required' }}, {{ status: 400 }});
      }}
      const messages = await context.agent.store.getMessages({{
        conversationId, userId: asked.user_id, limit: 100, order: 'asc',
      }});
      return Response.json({{
        conversation_id: conversationId,
        messages: messages.map((m: any) => ({{ id: m.messageId, role: m.role, text: m.content }})),
      }});
    }}
    """


def _project(name: str, framework: str, files: dict[str, str]) -> dict[str, str]:
    return {
        "package.json": json.dumps({"name": name, "private": True, "type": "module"}),
        "edgeone.json": json.dumps({"agents": {"framework": framework, "timeout": 300}}),
        "agents/_lib/sse.ts": SSE_HELPER,
        "agents/chat/stop.ts": STOP_AGENT,
        **files,
    }


LANGGRAPH = _project("node-langgraph-e2e", "langgraph", {
    "agents/_lib/model.ts": LANGCHAIN_MODEL,
    "agents/_lib/graph.ts": """
        import { MessagesAnnotation, StateGraph, START } from '@langchain/langgraph';
        import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
        import type { BaseCheckpointSaver } from '@langchain/langgraph';
        import type { ChatOpenAI } from '@langchain/openai';

        const SYSTEM = { role: 'system', content: 'You are a test agent. Use the tools.' };

        export function buildGraph(model: ChatOpenAI, tools: any[],
                                   checkpointer: BaseCheckpointSaver) {
          const bound = model.bindTools(tools);
          async function callModel(state: typeof MessagesAnnotation.State, config: any) {
            const answer = await bound.invoke([SYSTEM, ...state.messages], config);
            return { messages: [answer] };
          }
          return new StateGraph(MessagesAnnotation)
            .addNode('model', callModel)
            .addNode('tools', new ToolNode(tools))
            .addEdge(START, 'model')
            .addConditionalEdges('model', toolsCondition, ['tools', '__end__'])
            .addEdge('tools', 'model')
            .compile({ checkpointer });
        }
    """,
    "agents/chat/index.ts": """
        import { HumanMessage } from '@langchain/core/messages';
        import { tool } from '@langchain/core/tools';
        import { buildGraph } from '../_lib/graph';
        import { chunkText, gatewayModel } from '../_lib/model';
        import { type ChatBody, replyId, sseFrame, sseResponse } from '../_lib/sse';

        export async function onRequest(context: any): Promise<Response> {
          const { store, request, env } = context;
          const conversationId: string = context.conversation_id;
          const body = (request.body ?? {}) as ChatBody;
          if (!conversationId) {
            return Response.json({ error: 'makers-conversation-id is required' }, { status: 400 });
          }
          const checkpointer = store.langgraphCheckpointer;
          if (body.action === 'delete') {
            await checkpointer.deleteThread(conversationId);
            await store.clearMessages({ conversationId, userId: body.user_id });
            return Response.json({ deleted: true, conversation_id: conversationId });
          }
          const message = body.message ?? '';
          if (!message) return Response.json({ error: 'message is required' }, { status: 400 });
          await store.appendMessage({ conversationId, role: 'user', content: message,
            messageId: body.message_id, userId: body.user_id });

          const graph = buildGraph(gatewayModel(env), context.tools.toLangChainTools(tool),
            checkpointer);
          const signal: AbortSignal = request.signal;

          async function* turn(): AsyncGenerator<string> {
            yield sseFrame('start', { run_id: context.run_id });
            let reply = '';
            try {
              const stream = await graph.stream(
                { messages: [new HumanMessage(message)] },
                { configurable: { thread_id: conversationId }, streamMode: 'messages', signal },
              );
              for await (const [chunk] of stream) {
                const text = chunkText(chunk);
                if (!text) continue;
                reply += text;
                yield sseFrame('text_delta', { delta: text });
              }
            } catch (error) {
              if (!signal.aborted) yield sseFrame('error', { message: String(error) });
            }
            if (reply && !signal.aborted) {
              await store.appendMessage({ conversationId, role: 'assistant', content: reply,
                messageId: replyId(body), userId: body.user_id });
            }
            yield sseFrame('done', { stopped: signal.aborted });
          }
          return sseResponse(turn());
        }
    """,
    "cloud-functions/history.ts": _history("context.request.body"),
})

DEEPAGENTS = _project("node-deepagents-e2e", "deepagents", {
    "agents/_lib/model.ts": LANGCHAIN_MODEL,
    "agents/chat/index.ts": """
        import { tool } from '@langchain/core/tools';
        import { CompositeBackend, StateBackend, StoreBackend, createDeepAgent } from 'deepagents';
        import { chunkText, gatewayModel } from '../_lib/model';
        import { type ChatBody, replyId, sseFrame, sseResponse } from '../_lib/sse';

        const INSTRUCTIONS = 'You are a research assistant. Keep lasting notes under /memories/.';

        export async function onRequest(context: any): Promise<Response> {
          const { store, request, env } = context;
          const conversationId: string = context.conversation_id;
          const body = (request.body ?? {}) as ChatBody;
          const message = body.message ?? '';
          if (!conversationId || !message) {
            return Response.json({ error: 'makers-conversation-id and message are required' },
              { status: 400 });
          }
          await store.appendMessage({ conversationId, role: 'user', content: message,
            messageId: body.message_id, userId: body.user_id });

          const agent = createDeepAgent({
            model: gatewayModel(env),
            systemPrompt: INSTRUCTIONS,
            tools: context.tools.toLangChainTools(tool, ['web_search']),
            checkpointer: store.langgraphCheckpointer,
            store: store.langgraphStore,
            backend: new CompositeBackend(new StateBackend(), {
              '/memories/': new StoreBackend({
                namespace: ['research', body.user_id ?? 'anonymous'] }),
            }),
          });
          const signal: AbortSignal = request.signal;

          async function* turn(): AsyncGenerator<string> {
            yield sseFrame('start', { run_id: context.run_id });
            let reply = '';
            try {
              const stream = await agent.stream(
                { messages: [{ role: 'user', content: message }] },
                {
                  configurable: { thread_id: conversationId },
                  metadata: { run_id: context.run_id },
                  streamMode: 'messages',
                  signal,
                },
              );
              for await (const [chunk] of stream as AsyncIterable<[any, any]>) {
                const text = chunkText(chunk);
                if (!text) continue;
                reply += text;
                yield sseFrame('text_delta', { delta: text });
              }
            } catch (error) {
              if (!signal.aborted) yield sseFrame('error', { message: String(error) });
            }
            if (reply && !signal.aborted) {
              await store.appendMessage({ conversationId, role: 'assistant', content: reply,
                messageId: replyId(body), userId: body.user_id });
            }
            yield sseFrame('done', { stopped: signal.aborted });
          }
          return sseResponse(turn());
        }
    """,
    "cloud-functions/history.ts": _history("await context.request.json()"),
})

OPENAI_AGENTS = _project("node-openai-hitl-e2e", "openai-agents-sdk", {
    "agents/_lib/agent.ts": """
        import OpenAI from 'openai';
        import {
          Agent, OpenAIChatCompletionsModel, setTracingDisabled, tool,
        } from '@openai/agents';
        import { z } from 'zod';

        setTracingDisabled(true);  // traces would go to OpenAI

        /** Refunds need a person's approval: the run stops before the tool runs. */
        const issueRefund = tool({
          name: 'issue_refund',
          description: 'Refund an order. A person must approve it first.',
          parameters: z.object({ order: z.string(), amount: z.number() }),
          needsApproval: true,
          execute: async ({ order, amount }) => `refunded ${amount} on ${order}`,
        });

        export function supportAgent(env: Record<string, string | undefined>): Agent {
          const client = new OpenAI({ baseURL: env.AI_GATEWAY_BASE_URL,
            apiKey: env.AI_GATEWAY_API_KEY, maxRetries: 0 });
          const model = new OpenAIChatCompletionsModel(client,
            env.AI_GATEWAY_MODEL ?? '@makers/deepseek-v4-flash');
          return new Agent({ name: 'Support', instructions: 'You are a test agent.', model,
            tools: [issueRefund] });
        }
    """,
    "agents/chat/index.ts": """
        import { RunState, run } from '@openai/agents';
        import { supportAgent } from '../_lib/agent';
        import { type ChatBody, replyId, sseFrame, sseResponse } from '../_lib/sse';

        const PENDING_RUN = 'hitl.pending-run';  // the RunState of a run waiting for approval
        const HISTORY = 'hitl.history';          // the conversation's items, for the next turn

        export async function onRequest(context: any): Promise<Response> {
          const { store, request, env } = context;
          const conversationId: string = context.conversation_id;
          const body = (request.body ?? {}) as ChatBody;
          if (!conversationId) {
            return Response.json({ error: 'makers-conversation-id is required' }, { status: 400 });
          }
          const agent = supportAgent(env);
          const pending: string | null = await store.state.get(PENDING_RUN);
          let input: any;
          if (body.action === 'approve' || body.action === 'reject') {
            if (!pending) {
              return Response.json({ error: 'nothing awaits approval' }, { status: 409 });
            }
            const state = await RunState.fromString(agent, pending);
            for (const item of state.getInterruptions()) {
              if (body.action === 'approve') state.approve(item);
              else state.reject(item);
            }
            input = state;
          } else {
            const message = body.message ?? '';
            if (!message) return Response.json({ error: 'message is required' }, { status: 400 });
            if (pending) {
              return Response.json({ error: 'a tool call awaits approval' }, { status: 409 });
            }
            await store.appendMessage({ conversationId, role: 'user', content: message,
              messageId: body.message_id, userId: body.user_id });
            const history: any[] = (await store.state.get(HISTORY)) ?? [];
            input = [...history, { role: 'user', content: message }];
          }
          const signal: AbortSignal = request.signal;

          async function* turn(): AsyncGenerator<string> {
            yield sseFrame('start', { run_id: context.run_id });
            let reply = '';
            try {
              const result = await run(agent, input, { stream: true, signal });
              for await (const event of result) {
                if (event.type !== 'raw_model_stream_event') continue;
                if (event.data.type !== 'output_text_delta' || !event.data.delta) continue;
                reply += event.data.delta;
                yield sseFrame('text_delta', { delta: event.data.delta });
              }
              await result.completed;
              if (!signal.aborted && result.interruptions.length > 0) {
                await store.state.set(PENDING_RUN, result.state.toString());
                yield sseFrame('approval_required', { tools: result.interruptions.map(
                  (item: any) => ({ name: item.name, arguments: item.arguments })) });
              } else if (!signal.aborted) {
                await store.state.set(HISTORY, result.history);
                if (pending) await store.state.delete(PENDING_RUN);
              }
            } catch (error) {
              if (!signal.aborted) yield sseFrame('error', { message: String(error) });
            }
            if (reply && !signal.aborted) {
              await store.appendMessage({ conversationId, role: 'assistant', content: reply,
                messageId: replyId(body), userId: body.user_id });
            }
            yield sseFrame('done', { stopped: signal.aborted });
          }
          return sseResponse(turn());
        }
    """,
    "cloud-functions/history.ts": _history("context.request.body"),
})

FAMILIES = {"langgraph": LANGGRAPH, "deepagents": DEEPAGENTS, "openai-agents": OPENAI_AGENTS}
