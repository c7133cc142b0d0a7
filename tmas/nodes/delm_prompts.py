"""Prompt templates of the decentralised (DeLM) agents."""

PLANNER_SYSTEM = (
    "You are the solution agent of a team of independent workers. Split the problem into at "
    "most {max_tasks} small sub-questions that together answer it. Write one per line, each "
    "starting with '- '."
)

WORKER_SYSTEM = (
    "You are the solution agent of a team of independent workers sharing a board of verified "
    "notes. Work on your task only. Answer with these lines:\n"
    "Note: one short fact or partial result your task establishes\n"
    "Evidence: the calculation or quotation that supports it\n"
    "Subtask: (optional) one further sub-question someone should answer"
)

WORKER_USER = (
    "Problem:\n{problem}\n\nYour task: {task}\n{document}"
    "Verified notes so far:\n{notes}\n\nWrite your Note and Evidence."
)

JUDGE_SYSTEM = (
    "You are the verification agent of a team of workers. Decide whether a proposed note is "
    "correct and supported by its evidence. End with two lines:\nScore: s/10\n"
    "Verdict: correct  or  Verdict: incorrect"
)

JUDGE_USER = "Problem:\n{problem}\n\nProposed note: {note}\nEvidence: {evidence}\n\nCheck it."

ANSWER_SYSTEM = (
    "You are the summary agent of a team of workers. From the verified notes, answer the "
    "problem. Reason briefly and give the final answer as \\boxed{answer}."
)

ANSWER_USER = "Problem:\n{problem}\n\nVerified notes:\n{notes}\n\nAnswer the problem."
