// A terminal agent that remembers across runs: `OPENAI_API_KEY=… npx tsx agent.ts`
import { createInterface } from "node:readline/promises";
import { openai } from "@ai-sdk/openai";
import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from "ai";
import { openMemory } from "@hermes/memory-core";
import { memoryMiddleware, memoryTools } from "@hermes/memory-ai-sdk";

const sessionId = `agent-${Date.now()}`;
const memory = await openMemory({ sessionId }); // ~/.hermes (or $HERMES_HOME), config.yaml's provider
const model = wrapLanguageModel({
  model: openai("gpt-4o-mini"),
  middleware: memoryMiddleware(memory, { sessionId }),
});
const tools = memoryTools(memory, { sessionId });
const messages: ModelMessage[] = [];
const terminal = createInterface({ input: process.stdin, output: process.stdout });

try {
  for (;;) {
    const input = (await terminal.question("you> ")).trim();
    if (input === "" || input === "/exit") break;
    messages.push({ role: "user", content: input });
    const result = await generateText({ model, system: "You are a helpful assistant.", messages, tools, stopWhen: stepCountIs(5) });
    messages.push(...result.response.messages);
    console.log(`assistant> ${result.text}`);
  }
} finally {
  terminal.close();
  await memory.shutdownAll(); // waits for queued memory writes
}
