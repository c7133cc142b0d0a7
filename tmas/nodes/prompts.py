"""Prompt templates of the TMAS agents (plain ``str.format`` templates)."""

SOLVER_SYSTEM = (
    "You are the solution agent of a team that solves hard math problems. "
    "Reason step by step, check your arithmetic, and end with the final answer written as "
    "\\boxed{answer}."
)

SOLVER_INITIAL = "Problem:\n{problem}\n\nSolve the problem. Put the final answer in \\boxed{{}}."

SOLVER_EXPLOIT = (
    "Problem:\n{problem}\n\n"
    "An earlier attempt:\n{parent}\n\n"
    "What the verifiers said about that attempt:\n{summary}\n\n"
    "Reliable notes from earlier attempts:\n{experiences}\n\n"
    "Use the notes, fix any error in the earlier attempt, and write a complete corrected "
    "solution. Put the final answer in \\boxed{{}}."
)

SOLVER_EXPLORE = (
    "Problem:\n{problem}\n\n"
    "Strategies other attempts already used (do NOT use them; find a different approach):\n"
    "{guidelines}\n\n"
    "Solve the problem with a new strategy. Put the final answer in \\boxed{{}}."
)

SOLVER_REFERENCES = (
    "Problem:\n{problem}\n\n"
    "Solutions other solvers wrote in the previous round (they may be wrong):\n{references}\n\n"
    "Study them, decide what is right, and write your own complete solution. "
    "Put the final answer in \\boxed{{}}."
)

SOLVER_AGGREGATE = (
    "Problem:\n{problem}\n\n"
    "Candidate solutions (some may be wrong):\n{references}\n\n"
    "Aggregate them: keep the correct steps, fix the errors, and write one improved complete "
    "solution. Put the final answer in \\boxed{{}}."
)

SOLVER_EXPERIENCE = (
    "Problem:\n{problem}\n\n"
    "Verified facts and known pitfalls from earlier attempts:\n{experiences}\n\n"
    "Use them and solve the problem. Put the final answer in \\boxed{{}}."
)

VERIFIER_SYSTEM = (
    "You are the verification agent of a team that solves hard math problems. "
    "Check the proposed solution step by step and look for any error. End your report with "
    "two lines:\nScore: s/10  (10 means certainly correct, 0 certainly wrong)\n"
    "Verdict: correct  or  Verdict: incorrect"
)

VERIFIER_USER = "Problem:\n{problem}\n\nProposed solution:\n{solution}\n\nCheck it."

SUMMARY_SYSTEM = (
    "You are the summary agent of a team that solves hard math problems. Condense several "
    "verification reports about one solution into two or three sentences: which steps are "
    "right, which are wrong and why."
)

SUMMARY_USER = (
    "Problem:\n{problem}\n\nThe solution's final answer: {answer}\n\n"
    "Verification reports:\n{reports}\n\nWrite the summary."
)

EXPERIENCE_SYSTEM = (
    "You are the experience agent of a team that solves hard math problems. From one solution "
    "and the summary of its verification, extract at most 3 short, reliable facts about this "
    "problem: verified intermediate results (start with 'Verified:') and mistakes to avoid "
    "(start with 'Pitfall:'). Write one fact per line, each line starting with '- '."
)

EXPERIENCE_USER = (
    "Problem:\n{problem}\n\nSolution:\n{solution}\n\nVerification summary:\n{summary}\n\n"
    "List the facts."
)

GUIDELINE_SYSTEM = (
    "You are the guideline agent of a team that solves hard math problems. Name the "
    "high-level strategy a solution used, in one line that starts with 'Strategy:'. "
    "Describe the approach, not the numbers."
)

GUIDELINE_USER = "Problem:\n{problem}\n\nSolution:\n{solution}\n\nName its strategy."


def bullet_list(items: list[str], empty: str = "(none yet)") -> str:
    """Format items as a '- ' list.

    Example:
        >>> bullet_list(["a", "b"])
        '- a\\n- b'
    """
    return "\n".join(f"- {item}" for item in items) if items else empty


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, keeping its end (where the answer is).

    Example:
        >>> clip("abcdefgh", 6)
        '...fgh'
    """
    return text if len(text) <= limit else "..." + text[-max(limit - 3, 1) :]
