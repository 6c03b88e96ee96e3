"""Cron expressions as github.com/aptible/supercronic/cronexpr (v0.2.42) parses them and finds the next run.

Kyverno's DeletingPolicy `spec.schedule` is parsed with `cronexpr.Parse` and its next run is
`expr.Next(t)` (kk: kyverno/api policies.kyverno.io/v1beta1 deleting_policy.go
computeDeletingPolicyNextExecutionTime). The syntax is that library's, not robfig/cron's:

- 5 fields (minute hour day-of-month month day-of-week), 6 (a year appended) or 7 (seconds first, year
  last); fields past the seventh are ignored (non-strict Parse); fewer than 5: `missing field(s)`;
- `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`, `@hourly` replaced wherever they appear (a
  textual replacement, as strings.Replacer does);
- per field: `*` or `?`, `N`, `N-M`, `*/S`, `N/S`, `N-M/S`, comma lists; month and day-of-week names
  (`jan`, `january`, `sun`, `sunday`; case-insensitive); day-of-week `7` is Sunday; day-of-month `L`,
  `LW`, `NW`; day-of-week `NL` (last N-day of the month) and `N#K` (K-th N-day);
- when both day-of-month and day-of-week are restricted, a day matching either runs (crontab's rule).

The library's quirks are kept: a `*` anywhere in a list makes the field `*`; a step is looked up in its
number table (`0`..`59`, `00`..`09`, `1970`..`2099`), so `*/60` is an invalid interval; years run 1970-2099
and past 2099 there is no next run (None, Go's zero time).
"""

from __future__ import annotations

import bisect
import calendar
import datetime
import functools
import re
from dataclasses import dataclass, field

_NUMBERS: dict[str, int] = {str(i): i for i in range(60)}
_NUMBERS.update({f"0{i}": i for i in range(10)})
_NUMBERS.update({str(y): y for y in range(1970, 2100)})

_MONTHS = {"01": 1, "1": 1, "jan": 1, "january": 1, "02": 2, "2": 2, "feb": 2, "february": 2,
           "03": 3, "3": 3, "mar": 3, "march": 3, "04": 4, "4": 4, "apr": 4, "april": 4,
           "05": 5, "5": 5, "may": 5, "06": 6, "6": 6, "jun": 6, "june": 6, "07": 7, "7": 7, "jul": 7, "july": 7,
           "08": 8, "8": 8, "aug": 8, "august": 8, "09": 9, "9": 9, "sep": 9, "september": 9,
           "10": 10, "oct": 10, "october": 10, "11": 11, "nov": 11, "november": 11, "12": 12, "dec": 12, "december": 12}
_DAYS = {"0": 0, "sun": 0, "sunday": 0, "1": 1, "mon": 1, "monday": 1, "2": 2, "tue": 2, "tuesday": 2,
         "3": 3, "wed": 3, "wednesday": 3, "4": 4, "thu": 4, "thursday": 4, "5": 5, "fri": 5, "friday": 5,
         "6": 6, "sat": 6, "saturday": 6, "7": 0}


class CronError(ValueError):
    """str() is the library's error text (what Kyverno logs and refuses the policy's run with)."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    pattern: str
    tokens: dict[str, int] = field(default_factory=lambda: _NUMBERS)

    def atoi(self, text: str) -> int:
        # a Go map lookup: an unknown token is 0
        return self.tokens.get(text, 0)

    @property
    def default(self) -> list[int]:
        return list(range(self.low, self.high + 1))


_SECOND = _Field("second", 0, 59, r"0?[0-9]|[1-5][0-9]")
_MINUTE = _Field("minute", 0, 59, r"0?[0-9]|[1-5][0-9]")
_HOUR = _Field("hour", 0, 23, r"0?[0-9]|1[0-9]|2[0-3]")
_DOM = _Field("day-of-month", 1, 31, r"0?[1-9]|[12][0-9]|3[01]")
_MONTH = _Field("month", 1, 12, r"0?[1-9]|1[012]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|january|"
                r"february|march|april|march|april|june|july|august|september|october|november|december", _MONTHS)
_DOW = _Field("day-of-week", 0, 6, r"0?[0-7]|sun|mon|tue|wed|thu|fri|sat|sunday|monday|tuesday|wednesday|"
              r"thursday|friday|saturday", _DAYS)
_YEAR = _Field("year", 1970, 2099, r"19[789][0-9]|20[0-9]{2}")

_WILDCARD = r"^\*$|^\?$"
_VALUE = r"^(%value%)$"
_RANGE = r"^(%value%)-(%value%)$"
_WILDCARD_INTERVAL = r"^\*/(\d+)$"
_VALUE_INTERVAL = r"^(%value%)/(\d+)$"
_RANGE_INTERVAL = r"^(%value%)-(%value%)/(\d+)$"
_LAST_DOM = r"^l$"
_WORKDOM = r"^(%value%)w$"
_LAST_WORKDOM = r"^lw$"
_DOW_OF_LAST_WEEK = r"^(%value%)l$"
_DOW_OF_SPECIFIC_WEEK = r"^(%value%)#([1-5])$"

_MACROS = {"@yearly": "0 0 0 1 1 * *", "@annually": "0 0 0 1 1 * *", "@monthly": "0 0 0 1 * * *",
           "@weekly": "0 0 0 * * 0 *", "@daily": "0 0 0 * * * *", "@hourly": "0 0 * * * * *"}
_MACRO_RE = re.compile("|".join(re.escape(k) for k in _MACROS))
# Go's \d is ASCII; Python's str \d is not
_FIELDS_RE = re.compile(r"\S+", re.ASCII)
_ENTRIES_RE = re.compile(r"[^,]+")


@functools.lru_cache(maxsize=64)
def _layout(layout: str, value: str) -> re.Pattern[str]:
    return re.compile(layout.replace("%value%", value), re.ASCII)


_NONE, _ONE, _SPAN, _ALL = range(4)


@dataclass
class _Directive:
    kind: int
    text: str
    first: int = 0
    last: int = 0
    step: int = 1


def _parse_entries(text: str, desc: _Field) -> list[_Directive]:
    """genericFieldParse."""
    entries = _ENTRIES_RE.findall(text)
    if not entries:
        raise CronError(f"{desc.name} field: missing directive")
    out = []
    for entry in entries:
        s = entry.lower()
        if _layout(_WILDCARD, desc.pattern).search(s):
            out.append(_Directive(_ALL, entry, desc.low, desc.high, 1))
            continue
        if _layout(_VALUE, desc.pattern).search(s):
            out.append(_Directive(_ONE, entry, desc.atoi(s)))
            continue
        m = _layout(_RANGE, desc.pattern).search(s)
        if m:
            first, last = desc.atoi(m.group(1)), desc.atoi(m.group(2))
            if last < first:
                raise CronError(f"invalid interval {s} (normalized to {first}-{last})")
            out.append(_Directive(_SPAN, entry, first, last, 1))
            continue
        m = _layout(_WILDCARD_INTERVAL, desc.pattern).search(s)
        if m:
            step = _NUMBERS.get(m.group(1), 0)
            if step < 1 or step > desc.high:
                raise CronError(f"invalid interval {s}")
            out.append(_Directive(_SPAN, entry, desc.low, desc.high, step))
            continue
        m = _layout(_VALUE_INTERVAL, desc.pattern).search(s)
        if m:
            step = _NUMBERS.get(m.group(2), 0)
            if step < 1 or step > desc.high:
                raise CronError(f"invalid interval {s}")
            out.append(_Directive(_SPAN, entry, desc.atoi(m.group(1)), desc.high, step))
            continue
        m = _layout(_RANGE_INTERVAL, desc.pattern).search(s)
        if m:
            step = _NUMBERS.get(m.group(3), 0)
            if step < 1 or step > desc.high:
                raise CronError(f"invalid interval {s}")
            out.append(_Directive(_SPAN, entry, desc.atoi(m.group(1)), desc.atoi(m.group(2)), step))
            continue
        out.append(_Directive(_NONE, entry))
    return out


def _populate(values: set[int], d: _Directive) -> None:
    if d.kind == _ONE:
        values.add(d.first)
    else:
        values.update(range(d.first, d.last + 1, d.step))


def _generic(text: str, desc: _Field) -> list[int]:
    """genericFieldHandler: a `*` anywhere answers the whole field."""
    values: set[int] = set()
    for d in _parse_entries(text, desc):
        if d.kind == _NONE:
            raise CronError(f"syntax error in {desc.name} field: '{d.text}'")
        if d.kind == _ALL:
            return desc.default
        _populate(values, d)
    return sorted(values)


@dataclass
class CronExpression:
    """A parsed expression; `next_after` is `Expression.Next`."""

    text: str
    seconds: list[int]
    minutes: list[int]
    hours: list[int]
    months: list[int]
    years: list[int]
    days_of_month: set[int] = field(default_factory=set)
    workdays_of_month: set[int] = field(default_factory=set)
    last_day_of_month: bool = False
    last_workday_of_month: bool = False
    dom_restricted: bool = True
    days_of_week: set[int] = field(default_factory=set)
    specific_week_days: set[int] = field(default_factory=set)
    last_week_days: set[int] = field(default_factory=set)
    dow_restricted: bool = True

    def next_after(self, moment: datetime.datetime) -> datetime.datetime | None:
        """The first instant strictly after `moment` the expression matches, in `moment`'s zone; None when
        there is none (past 2099). Sub-second parts of `moment` are dropped from the answer, as Go's are."""
        t = moment
        i = bisect.bisect_left(self.years, t.year)
        if i == len(self.years):
            return None
        if t.year != self.years[i]:
            return self._next_year(t)
        i = bisect.bisect_left(self.months, t.month)
        if i == len(self.months):
            return self._next_year(t)
        if t.month != self.months[i]:
            return self._next_month(t)
        days = self._actual_days(t.year, t.month)
        if not days:
            return self._next_month(t)
        i = bisect.bisect_left(days, t.day)
        if i == len(days):
            return self._next_month(t)
        if t.day != days[i]:
            return self._next_day(t, days)
        i = bisect.bisect_left(self.hours, t.hour)
        if i == len(self.hours):
            return self._next_day(t, days)
        if t.hour != self.hours[i]:
            return self._next_hour(t, days)
        i = bisect.bisect_left(self.minutes, t.minute)
        if i == len(self.minutes):
            return self._next_hour(t, days)
        if t.minute != self.minutes[i]:
            return self._next_minute(t, days)
        i = bisect.bisect_left(self.seconds, t.second)
        if i == len(self.seconds):
            return self._next_minute(t, days)
        return self._next_second(t, days)

    def _at(self, t: datetime.datetime, year: int, month: int, day: int, hour: int, minute: int,
            second: int) -> datetime.datetime:
        return t.replace(year=year, month=month, day=day, hour=hour, minute=minute, second=second,
                         microsecond=0)

    def _next_year(self, t: datetime.datetime) -> datetime.datetime | None:
        i = bisect.bisect_left(self.years, t.year + 1)
        if i == len(self.years):
            return None
        year, month = self.years[i], self.months[0]
        days = self._actual_days(year, month)
        if not days:
            return self._next_month(self._at(t, year, month, 1, self.hours[0], self.minutes[0], self.seconds[0]))
        return self._at(t, year, month, days[0], self.hours[0], self.minutes[0], self.seconds[0])

    def _next_month(self, t: datetime.datetime) -> datetime.datetime | None:
        i = bisect.bisect_left(self.months, t.month + 1)
        if i == len(self.months):
            return self._next_year(t)
        month = self.months[i]
        days = self._actual_days(t.year, month)
        if not days:
            return self._next_month(self._at(t, t.year, month, 1, self.hours[0], self.minutes[0], self.seconds[0]))
        return self._at(t, t.year, month, days[0], self.hours[0], self.minutes[0], self.seconds[0])

    def _next_day(self, t: datetime.datetime, days: list[int]) -> datetime.datetime | None:
        i = bisect.bisect_left(days, t.day + 1)
        if i == len(days):
            return self._next_month(t)
        return self._at(t, t.year, t.month, days[i], self.hours[0], self.minutes[0], self.seconds[0])

    def _next_hour(self, t: datetime.datetime, days: list[int]) -> datetime.datetime | None:
        i = bisect.bisect_left(self.hours, t.hour + 1)
        if i == len(self.hours):
            return self._next_day(t, days)
        return self._at(t, t.year, t.month, t.day, self.hours[i], self.minutes[0], self.seconds[0])

    def _next_minute(self, t: datetime.datetime, days: list[int]) -> datetime.datetime | None:
        i = bisect.bisect_left(self.minutes, t.minute + 1)
        if i == len(self.minutes):
            return self._next_hour(t, days)
        return self._at(t, t.year, t.month, t.day, t.hour, self.minutes[i], self.seconds[0])

    def _next_second(self, t: datetime.datetime, days: list[int]) -> datetime.datetime | None:
        i = bisect.bisect_left(self.seconds, t.second + 1)
        if i == len(self.seconds):
            return self._next_minute(t, days)
        return self._at(t, t.year, t.month, t.day, t.hour, t.minute, self.seconds[i])

    def _actual_days(self, year: int, month: int) -> list[int]:
        """calculateActualDaysOfMonth (crontab: with both day fields restricted, either matching runs)."""
        last = calendar.monthrange(year, month)[1]
        if not self.dom_restricted and not self.dow_restricted:
            return list(range(1, last + 1))
        days: set[int] = set()
        if self.dom_restricted:
            if self.last_day_of_month:
                days.add(last)
            if self.last_workday_of_month:
                days.add(_workday(year, month, last, last))
            days.update(v for v in self.days_of_month if v <= last)
            days.update(_workday(year, month, v, last) for v in self.workdays_of_month if v <= last)
        if self.dow_restricted:
            # Go's Weekday: Sunday 0; Python's weekday(): Monday 0
            first_weekday = (datetime.date(year, month, 1).weekday() + 1) % 7
            offset = 7 - first_weekday
            for v in self.days_of_week:
                start = 1 + (offset + v) % 7
                days.update((start, start + 7, start + 14, start + 21))
                if start + 28 <= last:
                    days.add(start + 28)
            for v in self.specific_week_days:
                day = 1 + 7 * (v // 7) + (offset + v) % 7
                if day <= last:
                    days.add(day)
            origin = last - 6       # firstDayOfMonth.AddDate(0, 1, -7): the last day minus six
            origin_weekday = (datetime.date(year, month, origin).weekday() + 1) % 7
            offset = 7 - origin_weekday
            for v in self.last_week_days:
                day = origin + (offset + v) % 7
                if day <= last:
                    days.add(day)
        return sorted(days)


def _workday(year: int, month: int, day: int, last: int) -> int:
    """workdayOfMonth: Saturday -> Friday (or Monday the 3rd), Sunday -> Monday (or Friday at month's end)."""
    weekday = datetime.date(year, month, day).weekday()
    if weekday == 5:
        return day - 1 if day > 1 else day + 2
    if weekday == 6:
        return day + 1 if day < last else day - 2
    return day


def parse_cron(text: str) -> CronExpression:
    """cronexpr.Parse; CronError with the library's message."""
    cron = _MACRO_RE.sub(lambda m: _MACROS[m.group(0)], text)
    fields = _FIELDS_RE.findall(cron)
    if len(fields) < 5:
        raise CronError("missing field(s)")
    fields = fields[:7]
    index = 0
    if len(fields) == 7:
        seconds = _generic(fields[0], _SECOND)
        index = 1
    else:
        seconds = [0]
    minutes = _generic(fields[index], _MINUTE)
    hours = _generic(fields[index + 1], _HOUR)
    dom_text, month_text, dow_text = fields[index + 2], fields[index + 3], fields[index + 4]
    expr = CronExpression(text, seconds, minutes, hours, months=[], years=[])
    _dom(expr, dom_text)
    expr.months = _generic(month_text, _MONTH)
    _dow(expr, dow_text)
    expr.years = _generic(fields[index + 5], _YEAR) if index + 5 < len(fields) else _YEAR.default
    return expr


def _dom(expr: CronExpression, text: str) -> None:
    for d in _parse_entries(text, _DOM):
        if d.kind == _NONE:
            s = d.text.lower()
            if _layout(_LAST_DOM, _DOM.pattern).search(s):
                expr.last_day_of_month = True
            elif _layout(_LAST_WORKDOM, _DOM.pattern).search(s):
                expr.last_workday_of_month = True
            else:
                m = _layout(_WORKDOM, _DOM.pattern).search(s)
                if not m:
                    raise CronError(f"syntax error in day-of-month field: '{d.text}'")
                expr.workdays_of_month.add(_DOM.atoi(m.group(1)))
        elif d.kind == _ALL:
            _populate(expr.days_of_month, d)
            expr.dom_restricted = False
        else:
            _populate(expr.days_of_month, d)


def _dow(expr: CronExpression, text: str) -> None:
    for d in _parse_entries(text, _DOW):
        if d.kind == _NONE:
            s = d.text.lower()
            m = _layout(_DOW_OF_LAST_WEEK, _DOW.pattern).search(s)
            if m:
                expr.last_week_days.add(_DOW.atoi(m.group(1)))
                continue
            m = _layout(_DOW_OF_SPECIFIC_WEEK, _DOW.pattern).search(s)
            if not m:
                raise CronError(f"syntax error in day-of-week field: '{d.text}'")
            expr.specific_week_days.add((_DOW.atoi(m.group(2)) - 1) * 7 + _DOW.atoi(m.group(1)) % 7)
        elif d.kind == _ALL:
            _populate(expr.days_of_week, d)
            expr.dow_restricted = False
        else:
            _populate(expr.days_of_week, d)
