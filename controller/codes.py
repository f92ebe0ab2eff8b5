"""Error codes: what went wrong on a table, one code a technician can look up in
docs/operations.md ("Error codes"). The daemon puts the code on each warning or worse it logs
(the journald field CODE=, the `code` of `tablectl errors` and `tablectl logs`); a warning
logged without one (a driver's own line) is E900.
"""

from __future__ import annotations

CODES: dict[str, str] = {
    "E101": "journal unusable at start: the table is out of service",
    "E102": "journal write failed: the table is out of service",
    "E103": "journal replay failed: the table is out of service",
    "E104": "a journal checkpoint refused at start: verified from an older one",
    "E105": "the meters were replayed from a pruned journal: they lack the pruned rounds",
    "E106": "an archive of a closed segment is missing or altered (not deleted by retention)",
    "E107": "the journal key is a development key in the state directory on a table in"
            " production mode",
    "E201": "a device did not start",
    "E202": "a device command failed",
    "E203": "the self-test found problems",
    "E204": "a device driver reported a fault (the message names the device)",
    "E205": "a device service test failed (the message says what it saw)",
    "E301": "head-office link: cannot connect to the broker, or head office did not answer",
    "E302": "head-office link: down",
    "E303": "head-office link: a message refused",
    "E304": "head-office link: a task or session failed and was restarted",
    "E401": "software verification failed: the table is out of service",
    "E501": "the table went out of service",
    "E502": "a task of the daemon died and was restarted",
    "E503": "a part (extension or device) failed to stop",
    "E504": "the control socket stopped serving and was restarted",
    "E505": "the round machine refused an event (a fault in the machine)",
    "E506": "events ignored while out of service (or dealer's keys held at a linked start)",
    "E507": "a part did not stop within its limit and was abandoned",
    "E601": "alarm for the technician (the text says what)",
    "E602": "alarm for surveillance (the text says what)",
    "E603": "an alarm acknowledged by a person (the line names who and the alarm)",
    "E701": "a control-socket request refused (bad input, or a user not in the group)",
    "E801": "a notice: the table runs off play (simulation, a development journal key,"
            " unverified software in development mode); expected on a bench",
    "E702": "a control-socket command failed (a fault in the daemon)",
    "E900": "another warning (the message says what)",
}
OTHER = "E900"
# Logged as warnings, kept in the history, but not faults of the table: `tablectl errors`
# lists them apart and does not count them as errors.
NOT_FAULTS: dict[str, str] = {"E603": "acknowledgements", "E701": "refused requests",
                               "E801": "notices"}
