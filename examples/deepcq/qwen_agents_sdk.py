# Run: python examples/deepcq/qwen_agents_sdk.py [--base-url URL] [--model NAME]   (offline without --base-url: prints the chunks it would send)
"""deepcq's ``locate()`` feeding a Qwen agent: only the paragraphs of a document that answer the
question go into the prompt, verbatim.

deepcq's import lines with ``deepcq`` replaced by ``deepcontext.compat.deepcq``. The call goes
through the ``openai`` client to an OpenAI-compatible endpoint (DashScope's compatible mode:
https://dashscope-intl.aliyuncs.com/compatible-mode/v1, or a local vLLM / Ollama); key in
DASHSCOPE_API_KEY.
"""

import argparse
import os

from deepcontext.compat.deepcq import locate

DOC = (
    "The authentication service validates tokens on every request.\n\n"
    "Rate limiting is enforced per API key using a sliding window counter.\n\n"
    "The database migration tool applies schema changes in order.\n\n"
    "限流按每个 API 密钥计算，使用滑动窗口计数器。"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint serving Qwen")
    parser.add_argument("--model", default="qwen-plus")
    args = parser.parse_args()

    for question in ["how does rate limiting work?", "限流是怎么实现的？"]:
        chunks = locate(DOC, question)
        print(f"question: {question}")
        for c in chunks:
            print(f"  chunk {c.index} (score {c.score:.2f}): {c.text}")
        if args.base_url:
            from openai import OpenAI

            client = OpenAI(base_url=args.base_url, api_key=os.environ.get("DASHSCOPE_API_KEY", "not-needed"))
            context = "\n\n".join(c.text for c in chunks)
            reply = client.chat.completions.create(
                model=args.model,
                messages=[
                    {"role": "system", "content": f"Answer from this text only:\n{context}"},
                    {"role": "user", "content": question},
                ],
            )
            print(f"qwen: {reply.choices[0].message.content}")


if __name__ == "__main__":
    main()
