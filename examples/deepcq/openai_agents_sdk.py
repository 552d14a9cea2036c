# Run: python examples/deepcq/openai_agents_sdk.py [--base-url URL] [--model NAME]   (offline without --base-url: prints the instructions it would send)
"""deepcq as the context provider of an OpenAI agent: before each call, only the memory sections
relevant to the question go into the agent's instructions.

deepcq's import lines with ``deepcq`` replaced by ``deepcontext.compat.deepcq``. The call uses the
``openai`` client's Chat Completions (what the OpenAI Agents SDK sends for an agent without tools);
any OpenAI-compatible server works: ``--base-url``, key in OPENAI_API_KEY.
"""

import argparse
import os

from deepcontext.compat.deepcq import DeepCQ, MemorySchema
from deepcontext.compat.deepcq.integrations.ternary import ToolContextProvider

cq = DeepCQ(schema=MemorySchema(sections=["portfolio", "research", "risk-management"]))
cq.state.set("portfolio", "[portfolio]\nAAPL 40%, MSFT 35%, cash 25%\n")
cq.state.set("research", "[research]\nAnalyst notes: cloud revenue grew 21% year on year.\n")
cq.state.set("risk-management", "[risk-management]\nConcentration limit: no single position above 30%.\n")
provider = ToolContextProvider(cq)


def instructions(question: str) -> str:
    context = provider.get_context(question)
    return f"You are a financial research assistant. Use this context:\n{context}\n\nAnswer briefly."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. https://api.openai.com/v1")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    question = "What is my portfolio concentration risk?"
    system = instructions(question)
    result = cq.query(question)
    print(f"sections: {result.sections_included} ({result.metrics.reduction_pct:.1f}% smaller)")
    if not args.base_url:
        print(system)
        return
    from openai import OpenAI

    client = OpenAI(base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed"))
    reply = client.chat.completions.create(
        model=args.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": question}]
    )
    print(f"agent: {reply.choices[0].message.content}")


if __name__ == "__main__":
    main()
