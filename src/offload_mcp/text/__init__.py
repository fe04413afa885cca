"""How a result's text is read: the data document in it and where it sits, whether it is rows,
which keys a JSONPath spells plainly, and str scans a piece at a time.
"""
