"""What a run is asked and how its answer is scored: questions, gold hops, passages, answer matching.

A small typed input the core accepts; where questions come from (a generated world, MuSiQue, a
user's own evaluation set) is not its concern.
"""
