# Run: python examples/deepcq/claude_agents_sdk.py [--base-url URL] [--model NAME]   (offline without --base-url: prints each turn's system prompt)
"""deepcq as the memory of a multi-turn Claude agent: each exchange is saved in deepcq's history,
and the next turn's system prompt holds only the memory relevant to the new message.

deepcq's import lines with ``deepcq`` replaced by ``deepcontext.compat.deepcq``. The call goes
through the ``openai`` client to an OpenAI-compatible endpoint (Anthropic serves one at
https://api.anthropic.com/v1/); key in ANTHROPIC_API_KEY.
"""

import argparse
import os

from deepcontext.compat.deepcq import DeepCQ, MemorySchema
from deepcontext.compat.deepcq.integrations.ternary import LangChainMemoryAdapter

cq = DeepCQ(schema=MemorySchema(sections=["deploy", "incidents"]))
cq.state.set("deploy", "[deploy]\nLast release: v2.3.1 on Monday, rolled out to 40% of users.\n")
cq.state.set("incidents", "[incidents]\n- 02:15 OOM on worker-7, restarted\n")
memory = LangChainMemoryAdapter(cq)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. https://api.anthropic.com/v1/")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    args = parser.parse_args()
    client = None
    if args.base_url:
        from openai import OpenAI

        client = OpenAI(base_url=args.base_url, api_key=os.environ.get("ANTHROPIC_API_KEY", "not-needed"))

    for message in ["Were there any incidents last night?", "Which release was running when it happened?"]:
        context = memory.load_memory_variables({"input": message})["history"]
        system = f"You are an on-call assistant. Relevant memory:\n{context}"
        print(f"user: {message}")
        if client is None:
            print(f"system prompt:\n{system}\n")
            answer = "(offline)"
        else:
            reply = client.chat.completions.create(
                model=args.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": message}]
            )
            answer = reply.choices[0].message.content or ""
            print(f"claude: {answer}")
        memory.save_context({"input": message}, {"output": answer})
    print(f"history turns: {len(memory.chat_memory.messages)}")


if __name__ == "__main__":
    main()
