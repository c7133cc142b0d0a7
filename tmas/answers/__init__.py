"""Reading model output (answers, verdicts, lists) and grading answers against gold ones."""
