"""Values a user's prompt states, read as a tool-calling model reads them: places, head counts, people's names,
dates, times, phone numbers, e-mail addresses, ids, quoted text and keywords.

Relative dates ("tomorrow", "on Friday") are taken from today's date, so a prompt gives the same values all
day. Each reader returns None (or nothing) when the prompt does not say.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

# A place name: capitalized words, with the lower-case particles of names like Rio de Janeiro between them.
_WORD = r"[A-Z][\w'.-]*(?:\s+(?:(?:de|da|del|di|do|la|le|of|upon|am|an|sur)\s+)?[A-Z][\w'.-]*)*"
_PLACES = re.compile(rf"\b(?:in|for|at|to|from)\s+({_WORD}(?:(?:\s*,\s*|\s+and\s+){_WORD})*)")
_NOT_PLACES = {"I", "Mr", "Mrs", "Ms", "Dr", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
               "Sunday", "January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December", "Celsius", "Fahrenheit", "Kelvin"}
_COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12}
_COUNT = r"(\d+|" + "|".join(_COUNT_WORDS) + ")"
_PEOPLE = re.compile(rf"\b{_COUNT}\s+(?:people|persons|guests|adults|diners|attendees|participants|pax|of us)\b"
                     rf"|\b(?:party|group|table)\s+(?:of|for)\s+{_COUNT}\b", re.IGNORECASE)
_NAME = r"([A-Z][a-z]+(?:[ -][A-Z][a-z]+)?)"
_PERSON = re.compile(rf"\b(?:[Nn]ame(?:d| is|:)?|under(?: the name)?|[Cc]alled|I'm|I am|[Cc]ontact)\s+{_NAME}"
                     rf"|\b(?:Mr|Mrs|Ms|Dr)\.?\s+([A-Z][a-z]+)")
_PHONE = re.compile(r"(?:\+\d{1,3}[\s-]?)?(?:\(\d{3}\)\s*\d{3}-\d{4}|\b\d{3}-\d{3}-\d{4}|\b\d{3}-\d{4})\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# An order, ticket or booking id: "#1042", "A-1042", "ORD12345", "555-0100", a long number.
_IDENTIFIER = re.compile(r"#\s?(\w+)|\b([A-Z]{1,5}-?\d{2,}[A-Z\d-]*)\b|\b(\d{3,}(?:-\d+)+|\d{4,})\b")
_STOPWORDS = frozenset({"a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "from", "by",
                        "with", "about", "into", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did",
                        "can", "could", "would", "should", "will", "shall", "may", "might", "must", "i", "me", "my",
                        "you", "your", "we", "our", "it", "its", "this", "that", "these", "those", "what", "which",
                        "who", "whom", "whose", "when", "where", "why", "how", "please", "tell", "show", "give",
                        "find", "let", "us", "there", "here", "some", "any", "say", "says"})
_QUOTED = re.compile(r"[\"“]([^\"”]{1,200})[\"”]")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(r"\b(day after tomorrow|tomorrow|today|tonight|" + "|".join(_WEEKDAYS) + r")\b",
                       re.IGNORECASE)
_CLOCK_12 = re.compile(r"\b(\d{1,2})(?::([0-5]\d))?\s*([ap])\.?m\b\.?", re.IGNORECASE)
_CLOCK_24 = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_NOON = re.compile(r"\b(noon|midday|midnight)\b", re.IGNORECASE)


def places(text: str) -> list[str]:
    """Place names after in/for/at/to/from, in order, without repeats ("Rio de Janeiro, Paris and New York")."""
    found: list[str] = []
    for match in _PLACES.finditer(text):
        for name in re.split(r"\s*,\s*|\s+and\s+", match.group(1)):
            name = name.rstrip(".'")
            if name and name not in found and name.split()[0] not in _NOT_PLACES:
                found.append(name)
    return found


def head_count(text: str) -> int | None:
    """How many people ("3 people", "a party of four", "table for 2")."""
    match = _PEOPLE.search(text)
    if match is None:
        return None
    word = (match.group(1) or match.group(2)).lower()
    return _COUNT_WORDS.get(word) or int(word)


def person_name(text: str) -> str | None:
    match = _PERSON.search(text)
    return (match.group(1) or match.group(2)) if match else None


def phone_number(text: str) -> str | None:
    match = _PHONE.search(text)
    return match.group(0).strip() if match else None


def email_address(text: str) -> str | None:
    match = _EMAIL.search(text)
    return match.group(0) if match else None


def identifier(text: str) -> str | None:
    match = _IDENTIFIER.search(text)
    return next(g for g in match.groups() if g) if match else None


def keywords(text: str, leave_out: frozenset[str] = frozenset()) -> str:
    """The prompt's content words, as a search query: "How do I size GPU experts?" → "size GPU experts"."""
    words = re.findall(r"[\w][\w.+/-]*", text)
    return " ".join(w for w in words if w.lower() not in _STOPWORDS | leave_out)[:200]


def quoted_text(text: str) -> str | None:
    match = _QUOTED.search(text)
    return match.group(1) if match else None


def _month_date(month: str, day: str, year: str | None, today: date) -> date | None:
    number = _MONTHS.index(month.lower()[:3]) + 1
    try:
        found = date(int(year) if year else today.year, number, int(day))
    except ValueError:
        return None
    return found.replace(year=found.year + 1) if year is None and found < today else found


def stated_date(text: str, today: date | None = None) -> date | None:
    """A calendar date the prompt names: 2026-12-24, "Dec 24", "24th of December", "tomorrow", "on Friday"."""
    today = today or date.today()
    if match := _ISO_DATE.search(text):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return None
    if match := _MONTH_DAY.search(text):
        return _month_date(match[1], match[2], match[3], today)
    if match := _DAY_MONTH.search(text):
        return _month_date(match[2], match[1], match[3], today)
    if match := _RELATIVE.search(text):
        word = match[1].lower()
        offsets = {"today": 0, "tonight": 0, "tomorrow": 1, "day after tomorrow": 2}
        if word in offsets:
            return today + timedelta(days=offsets[word])
        ahead = (_WEEKDAYS.index(word) - today.weekday()) % 7 or 7  # the next one, never today
        return today + timedelta(days=ahead)
    return None


def stated_time(text: str) -> str | None:
    """A time of day as HH:MM (24-hour): "7:30 pm" → 19:30, "19:30", "noon" → 12:00."""
    if match := _CLOCK_12.search(text):
        hour = int(match[1]) % 12 + (12 if match[3].lower() == "p" else 0)
        return f"{hour:02d}:{match[2] or '00'}" if int(match[1]) <= 12 else None
    if match := _CLOCK_24.search(text):
        return f"{int(match[1]):02d}:{match[2]}"
    if match := _NOON.search(text):
        return "00:00" if match[1].lower() == "midnight" else "12:00"
    return None
