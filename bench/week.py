"""A simulated week of five agents sharing one store through MCP: how many of their drafts end
the week confirmed or deprecated.

Each agent works two sessions a day on a topic: `session_start` with its task, `memory_recall`
and `memory_get` of what it found, `check` before an action and an `outcome` for each rule the
check named, a new draft now and then (sometimes a rule, sometimes a near-duplicate), then the
reviews its briefing asks for. The tools are the real ones, called through the `mcp` SDK's
client against `build_server` in this process (in memory, no stdio: five servers times
hundreds of calls would take the machine's two cores for many minutes through subprocesses);
the clock is simulated (`when.utcnow` and the commit time moved by the script).

The agents model how a briefing is read, not how well a model reviews. Of the drafts its
briefing lists for review, an agent takes up one it is asked to judge because it relied on it
(or someone asked it) with probability `--p-asked`, one about its task's topic with
`--p-task` (it can check that one against the work in hand, whatever the briefing says of
it), and any other with `--p-listed`; a draft it reviews it judges right (each draft has a
hidden truth: `--wrong` of them are wrong). The same agents and seed run against the code of
another checkout with `--code DIR`:

    .venv/bin/python bench/week.py                       # this checkout
    git -C /work/main archive HEAD memstore | tar -x -C /tmp/base
    .venv/bin/python bench/week.py --code /tmp/base      # the same week on another checkout

Figures are printed; nothing is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time as real_time
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

AGENTS = ("ana", "ben", "cy", "dee", "eve")
TOPICS: dict[str, tuple[str, ...]] = {
    "billing": ("invoice", "refund", "stripe", "tax", "currency"),
    "deploy": ("rollout", "canary", "helm", "staging", "rollback"),
    "cache": ("redis", "ttl", "eviction", "warmup", "stampede"),
    "auth": ("token", "session", "oauth", "password", "mfa"),
    "search": ("index", "ranking", "query", "synonyms", "shard"),
    "frontend": ("bundle", "hydration", "css", "router", "a11y"),
}
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--seeds", default="1,2,3,4,5", help="one week per seed, then the total")
    p.add_argument("--sessions", type=int, default=2, help="per agent and day")
    p.add_argument("--p-asked", type=float, default=0.8)
    p.add_argument("--p-task", type=float, default=0.35)
    p.add_argument("--p-listed", type=float, default=0.1)
    p.add_argument("--wrong", type=float, default=0.2, help="share of drafts that are wrong")
    p.add_argument("--code", type=Path, help="run against the memstore package in DIR")
    return p.parse_args()


class Clock:
    """The simulated time: `when.utcnow` and the commit time read it."""

    def __init__(self) -> None:
        self.now = START

    def advance(self, **span: float) -> None:
        self.now += timedelta(**span)

    def install(self) -> None:
        from memstore.git import commit
        from memstore.model import when

        when.utcnow = lambda: self.now  # type: ignore[method-assign]
        shim = types.SimpleNamespace(
            **{k: getattr(real_time, k) for k in dir(real_time) if not k.startswith("_")}
        )
        shim.time = lambda: self.now.timestamp()
        commit.time = shim  # type: ignore[attr-defined]


class Agent:
    def __init__(self, name: str, client: Any, rng: random.Random) -> None:
        self.name = name
        self.client = client
        self.rng = rng
        self.drafts = 0


class World:
    """What the simulation knows that the store does not: each draft's truth and author."""

    def __init__(self, args: argparse.Namespace, rng: random.Random) -> None:
        self.args = args
        self.rng = rng
        self.truth: dict[str, bool] = {}
        self.author: dict[str, str] = {}
        self.topic: dict[str, str] = {}
        self.calls = 0
        self.refused = 0
        self.reviews = 0
        self.batch = False
        self.offered: dict[str, int] = {"relied": 0, "asked": 0, "task": 0, "listed": 0}
        self.taken: dict[str, int] = {"relied": 0, "asked": 0, "task": 0, "listed": 0}

    async def call(self, agent: Agent, tool: str, **arguments: Any) -> Any:
        self.calls += 1
        return await agent.client.call_tool(tool, arguments)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


SECTION = re.compile(r"^## (.+)$", re.M)
BULLET = re.compile(r"^- [a-z]+ `([a-z0-9-]+)` by [^\n(]*(?:\(([^)\n]*)\))?", re.M)


def review_asks(briefing: str) -> list[tuple[str, str]]:
    """(name, why) for each draft the briefing lists for review, in its order."""
    out: list[tuple[str, str]] = []
    parts = SECTION.split(briefing)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        if not title.startswith("Drafts"):
            continue
        relied = "relied on" in title
        for m in BULLET.finditer(body):
            out.append((m.group(1), "relied" if relied else (m.group(2) or "")))
    return out


def kind(why: str, on_topic: bool) -> str:
    """What makes an agent take a listed draft up: it is asked to judge one it relied on, or
    someone asked it; else whether the draft is about its task (the simulation knows each
    draft's topic, whatever the briefing says of it) or not."""
    if why == "relied":
        return "relied"
    if "asked you" in why:
        return "asked"
    return "task" if on_topic else "listed"


def chance(what: str, args: argparse.Namespace) -> float:
    return {"relied": args.p_asked, "asked": args.p_asked, "task": args.p_task}.get(
        what, args.p_listed
    )


async def session(world: World, agent: Agent, day: int, number: int) -> None:
    rng = agent.rng
    topic = rng.choice(sorted(TOPICS))
    words = rng.sample(TOPICS[topic], 2)
    task = f"{topic}: work on the {words[0]} and the {words[1]}"
    brief = text_of(await world.call(agent, "session_start", task=task))
    found = await world.call(agent, "memory_recall", query=f"{topic} {' '.join(words)}")
    hits = (found.structured_content or {}).get("results", [])
    names = [h["name"] for h in hits[:2]]
    if names:
        await world.call(agent, "memory_get", names=names)
    checked = await world.call(agent, "check", description=f"deploy the {topic} {words[0]} change")
    reasons = ((checked.structured_content or {}).get("check") or {}).get("reasons", [])
    for r in reasons:
        if r.get("kind") in ("correction", "warning") and r["name"] in world.truth:
            if world.truth[r["name"]] and rng.random() < 0.7:
                await world.call(agent, "outcome", name=r["name"], outcome="heeded")
    if rng.random() < 0.6:
        await save(world, agent, topic, words, day, number)
    await review(world, agent, brief, topic)


async def save(
    world: World, agent: Agent, topic: str, words: list[str], day: int, number: int
) -> None:
    rng = agent.rng
    agent.drafts += 1
    name = f"{agent.name}-{topic}-{words[0]}-{agent.drafts}"
    rule = rng.random() < 0.2
    args: dict[str, Any] = {
        "name": name,
        "type": "correction" if rule else rng.choice(("decision", "fact")),
        "description": f"For {topic}, the {words[0]} needs care with the {words[1]} (day {day})",
        "body": f"Seen in session {number} of day {day}: {' '.join(words)}.",
        "tags": [topic],
    }
    if rule:
        args |= {"severity": "p2", "applies_when": [f"{topic} {words[0]}"]}
    done = await world.call(agent, "memory_store", **args)
    if not done.is_error:
        world.truth[name] = rng.random() >= world.args.wrong
        world.author[name] = agent.name
        world.topic[name] = topic


async def review(world: World, agent: Agent, brief: str, topic: str) -> None:
    rng, args = agent.rng, world.args
    verdicts: dict[str, list[str]] = {"confirmed": [], "deprecated": []}
    for name, why in review_asks(brief):
        if name not in world.truth:
            continue
        what = kind(why, world.topic[name] == topic)
        world.offered[what] += 1
        if rng.random() >= chance(what, args):
            continue
        world.taken[what] += 1
        got = await world.call(agent, "memory_get", names=[name])
        if got.is_error:
            continue
        verdicts["confirmed" if world.truth[name] else "deprecated"].append(name)
    for to, names in verdicts.items():
        if not names:
            continue
        reason = "checked against the code" if to == "confirmed" else "wrong: the code says else"
        batches = [names] if world.batch and len(names) > 1 else [[n] for n in names]
        for batch in batches:
            one: Any = batch if len(batch) > 1 else batch[0]
            done = await world.call(agent, "memory_promote", name=one, to=to, reason=reason)
            if done.is_error:
                world.refused += len(batch)
                continue
            refused = len((done.structured_content or {}).get("refused", []))
            world.refused += refused
            world.reviews += len(batch) - refused


async def week(args: argparse.Namespace, root: Path, seed: int) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    from mcp import Client

    from memstore.faces.server import build_server
    from memstore.storage.store import Store

    clock = Clock()
    clock.install()
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    Store.init(root / "memory", agent="ana")
    world = World(args, rng)
    async with AsyncExitStack() as stack:
        agents: list[Agent] = []
        for name in AGENTS:
            server = build_server(Store(root / "memory", agent=name), watch=False)
            client = await stack.enter_async_context(Client(server))
            agents.append(Agent(name, client, random.Random(f"{seed}-{name}")))
        listed = (await agents[0].client.list_tools()).tools
        promote = next(t for t in listed if t.name == "memory_promote")
        world.batch = "anyOf" in promote.input_schema["properties"]["name"]
        for day in range(args.days):
            for number in range(args.sessions):
                order = list(agents)
                rng.shuffle(order)
                for agent in order:
                    clock.advance(minutes=rng.randint(20, 90))
                    await session(world, agent, day, number)
            clock.advance(hours=12)
    store = Store(root / "memory")
    statuses = {n: store.get(n).status for n in world.truth}
    return {"world": world, "statuses": statuses}


def line(result: dict[str, Any], seed: int) -> tuple[int, int, str]:
    """(drafts, reviewed, one printed line) for one seed's week."""
    world: World = result["world"]
    statuses: dict[str, str] = result["statuses"]
    drafts = len(statuses)
    confirmed = sum(1 for s in statuses.values() if s == "confirmed")
    deprecated = sum(1 for s in statuses.values() if s == "deprecated")
    wrong_left = sum(1 for n, s in statuses.items() if s == "draft" and not world.truth[n])
    share = (confirmed + deprecated) / drafts if drafts else 0.0
    asks = ", ".join(f"{k} {world.taken[k]}/{world.offered[k]}" for k in world.offered)
    text = (
        f"seed {seed}: {drafts} drafts, {confirmed} confirmed + {deprecated} deprecated = "
        f"{share:.1%}; wrong ones left in draft {wrong_left}; refused {world.refused}; "
        f"MCP calls {world.calls}; review asks taken/offered: {asks}"
    )
    return drafts, confirmed + deprecated, text


def main() -> None:
    args = parse()
    if args.code is not None and os.environ.get("WEEK_CODE") != str(args.code):
        env = {**os.environ, "WEEK_CODE": str(args.code), "PYTHONPATH": str(args.code)}
        sys.exit(subprocess.call([sys.executable, *sys.argv], env=env))
    code = os.environ.get("WEEK_CODE") or str(Path(__file__).resolve().parents[1])
    import memstore

    code = f"{code} ({Path(memstore.__file__).parent})"
    print(f"code: {code}")
    print(
        f"agents {len(AGENTS)}, days {args.days}, sessions/agent/day {args.sessions}; "
        f"p_asked {args.p_asked}, p_task {args.p_task}, p_listed {args.p_listed}, "
        f"wrong {args.wrong}"
    )
    os.environ.update(
        {"GIT_AUTHOR_EMAIL": "week@example.com", "GIT_COMMITTER_EMAIL": "week@example.com"}
    )
    drafts = reviewed = 0
    batch = False
    for seed in [int(s) for s in args.seeds.split(",")]:
        with tempfile.TemporaryDirectory(prefix="week-") as tmp:
            root = Path(tmp) / "repo"
            root.mkdir()
            result = asyncio.run(week(args, root, seed))
        n, done, text = line(result, seed)
        batch = result["world"].batch
        drafts, reviewed = drafts + n, reviewed + done
        print(text, flush=True)
    share = reviewed / drafts if drafts else 0.0
    print(
        f"all seeds: {reviewed} of {drafts} drafts confirmed or deprecated after {args.days} "
        f"days = {share:.1%} (batch memory_promote: {'yes' if batch else 'no'})"
    )


if __name__ == "__main__":
    main()
