"""The Monitor tab: its view, the data frames behind its charts, and the HTML of its panels."""
