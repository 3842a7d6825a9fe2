"""Routing: which agent a turn goes to, and why (protocol.md, open detail 5).

A pure function of the session's routing state and the requested route, so the table can be
tested without a server. It returns the plan and the session's routing state after the
choice (`route: "local"` takes an escalation back; `route: "claude"` makes it stick); the
engine applies both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from milk_lsp.sessions.model import Agent, Session, SessionState

Route = Literal["auto", "local", "claude", "advise"]

ADVISOR_REASON = "user asked for Claude's plan"
"""`turn_started.reason` of an advisor turn (route `advise`)."""
WAITING_ON_CLAUDE = "session waiting on Claude"
"""`turn_started.reason` of a turn that answers Claude's question."""


@dataclass(frozen=True)
class Plan:
    """How one turn is routed."""

    agent: Agent
    route: str
    reason: str
    """`turn_started.reason`."""
    offer_escalation: bool = True
    """The local model is offered `escalate_to_claude` (and its failures are handed off)."""
    escalated_by: Literal["user", "agent"] | None = None
    escalation_reason: str = ""

    @property
    def watches_local(self) -> bool:
        """Route `auto` to the local agent: milk cuts a failing local part short and may
        hand it to Claude (on route `local` the user chose the local model)."""
        return self.route == "auto" and self.agent is Agent.LOCAL and self.offer_escalation

    @property
    def advises(self) -> bool:
        """Route `advise`: Claude writes a plan, the local model carries it out step by step."""
        return self.route == "advise"

    @property
    def answers_claude(self) -> bool:
        """The turn goes to Claude because Claude asked a question, not because the user
        escalated (the routing numbers count it apart)."""
        return self.reason == WAITING_ON_CLAUDE


@dataclass(frozen=True)
class RoutingState:
    """The session fields routing reads and may change."""

    state: SessionState
    user_escalated: bool
    has_claude_conversation: bool

    @classmethod
    def of(cls, session: Session) -> RoutingState:
        return cls(session.state, session.user_escalated, bool(session.claude_session_id))


def route_turn(current: RoutingState, requested: Route) -> tuple[Plan, RoutingState]:
    """The plan for a `milk/chat` turn and the routing state after choosing it."""
    if requested == "local":
        state = (
            SessionState.ROUTING
            if current.state is SessionState.ESCALATION_WAITING
            else current.state
        )
        after = RoutingState(state, False, current.has_claude_conversation)
        return Plan(Agent.LOCAL, "local", "user chose the local agent", False), after
    if requested == "advise":
        # Claude plans, the local model does: the escalation does not stick, and a question
        # Claude was waiting on is answered by the plan's turn
        after = RoutingState(SessionState.ROUTING, False, current.has_claude_conversation)
        plan = Plan(Agent.CLAUDE, "advise", ADVISOR_REASON, False, "user", "plan only (advisor)")
        return plan, after
    if requested == "claude":
        after = RoutingState(current.state, True, current.has_claude_conversation)
        return Plan(Agent.CLAUDE, "claude", "user asked", False, "user", "user asked"), after
    if current.state is SessionState.ESCALATION_WAITING and current.has_claude_conversation:
        plan = Plan(
            Agent.CLAUDE,
            "auto",
            WAITING_ON_CLAUDE,
            False,
            "user",
            "answering Claude's question",
        )
        return plan, current
    if current.user_escalated:
        plan = Plan(
            Agent.CLAUDE,
            "auto",
            "session escalated by the user",
            False,
            "user",
            "continuing with Claude",
        )
        return plan, current
    return Plan(Agent.LOCAL, "auto", "default", True), current


def plan_for(session: Session, requested: Route) -> Plan:
    """The plan for the session's next turn; the session takes the routing state it leaves."""
    plan, after = route_turn(RoutingState.of(session), requested)
    session.state, session.user_escalated = after.state, after.user_escalated
    return plan


def escalate_plan(reason: str) -> Plan:
    """The plan of a `milk/escalate` turn (it also makes the escalation stick)."""
    return Plan(Agent.CLAUDE, "claude", "user asked", False, "user", reason)


_PLAIN_REASONS = {
    WAITING_ON_CLAUDE: "Claude asked a question: your answer goes to Claude",
    "session escalated by the user": "you sent this session to Claude",
    "default": "local model first; it hands hard turns to Claude",
}


def next_route(current: RoutingState) -> tuple[Agent, str]:
    """Where the next turn with route `auto` goes, and why in plain words (the editors show
    it next to the input, with a way back to the local model)."""
    plan, _ = route_turn(current, "auto")
    return plan.agent, _PLAIN_REASONS.get(plan.reason, plan.reason)
