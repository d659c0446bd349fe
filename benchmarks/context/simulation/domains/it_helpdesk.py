"""IT helpdesk (corporate service desk) domain: a held-out domain.

Written after the pipeline had been adjusted on ``finance`` and ``healthcare_admin``, in a casual
register (lowercase, missing apostrophes) with tool errors in yet other formats; its first
measured results are reported as they came out.
"""

from __future__ import annotations

from benchmarks.context.simulation.domain import Domain, Fact, Phrasing, Policy, Skill, Tool

FACTS = [
    Fact(
        key="password-expiry-interval",
        section="security",
        title="Password expiry interval",
        subject="password expiry interval",
        claim="Passwords expire every {value}.",
        value="90 days",
        stale=["60 days", "180 days"],
        questions=["how often do passwords expire?", "What is the password expiry interval?"],
        extra=["You get a reminder e-mail 7 days before expiry."],
        extra_question="do I get a reminder before my password expires?",
    ),
    Fact(
        key="account-lockout-duration",
        section="security",
        title="Account lockout duration",
        subject="account lockout duration",
        claim="A locked account unlocks automatically after {value}.",
        value="30 minutes",
        stale=["15 minutes", "1 hour"],
        questions=[
            "What is the account lockout duration?",
            "how long am I locked out after too many failed sign-ins?",
        ],
        extra=["Accounts lock after 5 failed sign-in attempts."],
    ),
    Fact(
        key="verification-code-expiry",
        section="security",
        title="Verification code expiry",
        subject="verification code expiry",
        claim="Sign-in verification codes expire after {value}.",
        value="10 minutes",
        stale=["5 minutes"],
        questions=["When does a verification code expire?", "how long is a sign-in verification code valid?"],
        extra=["Codes are sent by the authenticator app or by text."],
        alias_questions=["how long do I have before I get locked out when signing in?"],
    ),
    Fact(
        key="mailbox-size-limit",
        section="email",
        title="Mailbox size limit",
        subject="mailbox size limit",
        claim="The mailbox size limit is {value} GB.",
        value="100",
        stale=["50"],
        questions=["What is the mailbox size limit?", "how big can my mailbox get?"],
        extra=["Archived mail does not count toward the limit."],
    ),
    Fact(
        key="email-attachment-limit",
        section="email",
        title="Email attachment limit",
        subject="email attachment limit",
        claim="Email attachments can be up to {value} MB.",
        value="25",
        stale=["10", "20"],
        questions=["What is the email attachment limit?", "how large can an email attachment be?"],
        extra=["Larger files should be shared with a OneDrive link."],
        alias_questions=["what's the biggest size my mailbox file can be?"],
    ),
    Fact(
        key="vpn-session-timeout",
        section="network",
        title="VPN session timeout",
        subject="vpn session timeout",
        claim="VPN sessions time out after {value} of inactivity.",
        value="8 hours",
        stale=["4 hours", "2 hours"],
        questions=["What is the VPN session timeout?", "how long before the vpn disconnects me when idle?"],
        extra=["Reconnect with the VPN client in the system tray."],
    ),
    Fact(
        key="guest-wifi-pass-validity",
        section="network",
        title="Guest Wi-Fi pass validity",
        subject="guest wi-fi pass validity",
        claim="Guest Wi-Fi passes are valid for {value}.",
        value="24 hours",
        stale=["12 hours", "8 hours"],
        questions=["How long is a guest Wi-Fi pass valid?", "how long does a guest wifi pass last?"],
        extra=["Passes are issued at reception."],
        alias_questions=["how long will my visitor stay connected on the vpn?"],
    ),
    Fact(
        key="laptop-refresh-cycle",
        section="devices",
        title="Laptop refresh cycle",
        subject="laptop refresh cycle",
        claim="Laptops are replaced every {value}.",
        value="4 years",
        stale=["3 years", "5 years"],
        questions=["What is the laptop refresh cycle?", "how often do we get new laptops?"],
        extra=["Refresh dates are listed in the device portal."],
        extra_question="where can I see when my laptop will be refreshed?",
    ),
    Fact(
        key="loaner-laptop-period",
        section="devices",
        title="Loaner laptop period",
        subject="loaner laptop period",
        claim="Loaner laptops can be kept for up to {value}.",
        value="2 weeks",
        stale=["1 week", "5 days"],
        questions=["What is the loaner laptop period?", "how long can I keep a loaner laptop?"],
        extra=["Return loaners to the service desk on floor 2."],
        alias_questions=["how long can I keep a replacement laptop?"],
    ),
    Fact(
        key="mobile-phone-stipend",
        section="devices",
        title="Mobile phone stipend",
        subject="mobile phone stipend",
        claim="The monthly mobile phone stipend is {value}.",
        value="$50",
        stale=["$40", "$30"],
        questions=["What is the mobile phone stipend?", "how much do we get each month for our phones?"],
        extra=["Claim the stipend through the expenses tool."],
    ),
    Fact(
        key="new-hire-account-lead-time",
        section="accounts",
        title="New hire account lead time",
        subject="new hire account lead time",
        claim="New hire accounts must be requested {value} before the start date.",
        value="5 business days",
        stale=["3 business days", "2 business days"],
        questions=[
            "What is the new hire account lead time?",
            "how early do I need to request an account for a new starter?",
        ],
        extra=["Managers submit the request in the HR portal."],
        extra_question="where do managers request new hire accounts?",
    ),
    Fact(
        key="software-install-turnaround",
        section="software",
        title="Software install turnaround",
        subject="software install turnaround",
        claim="Approved software is installed within {value} of the request.",
        value="2 business days",
        stale=["5 business days"],
        questions=[
            "What is the software install turnaround?",
            "how long does it take to get approved software installed?",
        ],
        extra=["Only software from the catalog can be requested."],
    ),
    Fact(
        key="priority-2-response-time",
        section="support",
        title="Priority 2 response time",
        subject="priority 2 response time",
        claim="Priority 2 tickets get a first response within {value}.",
        value="4 hours",
        stale=["8 hours", "1 business day"],
        questions=["What is the priority 2 response time?", "how fast do you respond to a P2 ticket?"],
        extra=["Priority 1 incidents are handled around the clock."],
    ),
    Fact(
        key="shared-drive-retention",
        section="software",
        title="Shared drive retention",
        subject="shared drive retention",
        claim="Deleted files on shared drives can be restored for {value}.",
        value="30 days",
        stale=["14 days", "90 days"],
        questions=[
            "What is the shared drive retention?",
            "how long can deleted files on the shared drive be restored?",
        ],
        extra=["Restores are requested through a service desk ticket."],
    ),
]

SKILLS = [
    Skill(
        name="reset-a-password",
        title="Reset a password",
        description="Resetting a user's password after verifying who they are.",
        steps=[
            "Verify the caller with their employee ID and manager's name.",
            "Temporary passwords must be changed within {value}.",
            "Remind the user to update saved passwords on their phone.",
        ],
        value="24 hours",
        stale=["72 hours", "48 hours"],
        questions=[
            "how long do I have to change a temporary password?",
            "when does my temp password need to be changed?",
        ],
    ),
    Skill(
        name="report-a-lost-device",
        title="Report a lost device",
        description="What to do when a laptop or phone is lost or stolen.",
        steps=[
            "Lost devices must be reported within {value}.",
            "Remotely lock and wipe the device.",
            "File a police report for stolen devices.",
        ],
        value="1 hour",
        stale=["24 hours", "4 hours"],
        questions=[
            "how quickly do I need to report a lost laptop?",
            "What's the deadline for reporting a lost phone?",
        ],
    ),
    Skill(
        name="grant-admin-rights",
        title="Grant admin rights",
        description="Temporary local administrator rights on a laptop.",
        steps=[
            "Check the manager's approval in the ticket.",
            "Admin rights are granted for {value} at a time.",
            "Log the grant in the privileged access register.",
        ],
        value="30 days",
        stale=["90 days", "60 days"],
        questions=[
            "how long do admin rights last once granted?",
            "For how long can I get local admin rights?",
        ],
    ),
    Skill(
        name="offboard-an-employee",
        title="Offboard an employee",
        description="Closing accounts and collecting devices when someone leaves.",
        steps=[
            "Disable the account on the last working day.",
            "The leaver's mailbox is kept for {value}.",
            "Collect the laptop and badge.",
        ],
        value="30 days",
        stale=["90 days"],
        questions=[
            "how long do you keep a mailbox after someone leaves?",
            "what happens to a leaver's mailbox, how long is it kept?",
        ],
    ),
]

TOOLS = [
    Tool(
        name="create_ticket",
        description="Open a service desk ticket.",
        parameters=["`summary`: one line.", "`priority`: `{literal}` for outages, `P2` or `P3` otherwise."],
        right="P1",
        wrong=["critical", "urgent"],
        requests=[
            "the whole floor has no internet, please open a ticket",
            "Our team's shared drive is down, can you log an outage ticket?",
        ],
        args={"summary": "Network outage, floor 3", "priority": "{literal}"},
        success="Ticket INC-40213 created (P1).",
        error="400 Bad Request: priority must be one of P1, P2, P3 (got '{wrong}')",
        done_reply="Done, ticket INC-40213 is open as a P1.",
    ),
    Tool(
        name="reset_mfa",
        description="Reset a user's multi-factor sign-in method.",
        parameters=["`{literal}`: the user's sign-in name (e.g. j.doe@contoso.com)."],
        right="upn",
        wrong=["email", "username"],
        requests=[
            "I got a new phone, can you reset my MFA?",
            "my authenticator app is gone, please reset my mfa",
        ],
        args={"{literal}": "j.doe@contoso.com"},
        success="MFA reset for j.doe@contoso.com.",
        error="ERROR: field '{wrong}' is not recognised; use '{right}'",
        done_reply="Your MFA is reset; you'll be asked to set it up at next sign-in.",
    ),
    Tool(
        name="book_loaner",
        description="Reserve a loaner laptop.",
        parameters=[
            "`device`: laptop model.",
            "`{literal}`: first day of the loan (YYYY-MM-DD).",
            "`days`: length of the loan.",
        ],
        right="start_date",
        wrong=["from", "begin"],
        requests=[
            "my laptop is in repair, can I get a loaner from Monday?",
            "please book me a loaner laptop for next week",
        ],
        args={"device": "T14", "{literal}": "2025-06-02", "days": "7"},
        success="Loaner T14 reserved from 2025-06-02 for 7 days.",
        error="Validation failed: unexpected key '{wrong}'. Expected keys: 'device', '{right}', 'days'.",
        done_reply="Your loaner is reserved; pick it up at the service desk.",
    ),
]

POLICIES = [
    Policy(
        instruction="Never ask users for their password; send them to the self-service reset page.",
        questions=[
            "i forgot my password, can I tell you my old one so you can reset it?",
            "Do you need my current password to fix my account?",
        ],
        bad_reply="Sure, tell me your old password and I'll reset it for you.",
        good_reply="Please never share your password. You can reset it on the self-service page.",
        corrections=[
            "you should never ask for my password lol",
            "wait, you're not supposed to ask for passwords are you?",
        ],
    ),
    Policy(
        instruction="Escalate suspected phishing e-mails to the security team right away.",
        questions=[
            "I got a weird email asking me to confirm my bank details, what should I do?",
            "Is this e-mail from 'IT support' asking for my login legit?",
        ],
        bad_reply="Just delete it and carry on.",
        good_reply="That looks like phishing. I've escalated it to the security team.",
        corrections=[
            "shouldnt this go to the security team?",
            "you need to escalate phishing to security, not tell me to delete it",
        ],
    ),
    Policy(
        instruction="Do not install software that is not in the software catalog; point users to the catalog.",
        questions=[
            "Can you install this free PDF tool I found online?",
            "can you put this browser extension on my laptop?",
        ],
        bad_reply="Sure, I'll push it to your laptop now.",
        good_reply="I can only install software from the catalog; here's the link to request it.",
        corrections=[
            "I thought you weren't supposed to install stuff that's not in the catalog.",
            "you shouldn't install random software for people",
        ],
    ),
    Policy(
        instruction="Always give users the ticket number after creating a ticket.",
        questions=[
            "Please open a ticket for my broken monitor.",
            "can you log a ticket, my keyboard stopped working",
        ],
        bad_reply="I've created a ticket for your monitor.",
        good_reply="Ticket INC-40877 is open for your monitor.",
        corrections=["you didn't give me a ticket number", "you forgot to tell me the ticket number"],
    ),
]

PHRASING = Phrasing(
    stale_corrections=[
        "thats wrong, its {expected} now",
        "no... it's {expected}. that changed a while ago",
        "I'm fairly sure the {subject} is {expected} these days.",
        "Hmm, IT told us {expected} last month, not {got}.",
        "that's old info, {expected} is current",
    ],
    gap_corrections=[
        "it's {expected} btw",
        "The {subject} is {expected}, it's on the intranet.",
        "{expected}. you really should have that documented",
    ],
    rf_corrections=[
        "not what I meant, I was asking about the {subject}. it's {expected}",
        "wrong topic. the {subject} is {expected}",
    ],
    tool_complaints=[
        "ugh, it failed again",
        "why is this broken",
        "ok this is getting old",
        "can you just try once more?",
    ],
    answer_prefixes=["", "From the knowledge base: ", "Sure! ", "OK, "],
    gap_replies=[
        "Sorry, I can't find that in the knowledge base.",
        "Hmm, there's nothing on the {subject} in our docs.",
    ],
    acknowledgements=[
        "My mistake, the {subject} is {expected}.",
        "Got it, thanks: the {subject} is {expected}.",
    ],
    tool_failure_replies=["That request failed, sorry.", "The system rejected the request."],
    thanks=["thx", "cool, thanks", "great thanks!", "ok got it"],
    welcome=["No problem!", "Happy to help."],
    give_up=["whatever, I'll walk over to the service desk", "forget it"],
    control_openers=["also {question}", "ok. {question}", "{question}", "btw {question}"],
    reasoning=["Searching the knowledge base for the {subject}.", "I'll check the docs on the {subject}."],
)

DOMAIN = Domain(
    name="it_helpdesk",
    organization="Contoso IT Service Desk",
    system_intro=(
        "You are the Contoso IT service desk assistant. Help employees with accounts, passwords, "
        "devices, network access, e-mail and software, using the knowledge base, the desk's "
        "procedures and the ticketing tools."
    ),
    facts=FACTS,
    skills=SKILLS,
    tools=TOOLS,
    policies=POLICIES,
    phrasing=PHRASING,
)
