"""What is computed from recorded results and decisions: replay, the needed-fact measure, the
client models, stats and the dashboard drawn from them.
"""
