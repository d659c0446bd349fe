"""Healthcare administration (clinic patient services) domain: the second benchmark domain.

Written after the pipeline was developed on ``finance``, with its own wording for users, agent and
tool errors, to check that the pipeline carries over to a domain it was not tuned on.
"""

from __future__ import annotations

from benchmarks.context.simulation.domain import Domain, Fact, Phrasing, Policy, Skill, Tool

FACTS = [
    Fact(
        key="specialist-visit-copay",
        section="insurance",
        title="Specialist visit copay",
        subject="specialist visit copay",
        claim="The specialist visit copay is {value}.",
        value="$40",
        stale=["$30", "$35"],
        questions=["What is the specialist visit copay?", "How much is my copay for a specialist visit?"],
        extra=["Copays are collected at check-in.", "Referrals are not required for in-network specialists."],
        extra_question="When do I pay my copay?",
        alias_questions=["How much do I owe for a cardiology appointment?"],
    ),
    Fact(
        key="primary-care-visit-copay",
        section="insurance",
        title="Primary care visit copay",
        subject="primary care visit copay",
        claim="The primary care visit copay is {value}.",
        value="$20",
        stale=["$15", "$25"],
        questions=["What is the primary care visit copay?", "How much is the copay for my regular doctor?"],
        extra=["Annual wellness visits have no copay."],
        extra_question="Is there a copay for my annual wellness visit?",
    ),
    Fact(
        key="missed-appointment-fee",
        section="appointments",
        title="Missed appointment fee",
        subject="missed appointment fee",
        claim="The missed appointment fee is {value}.",
        value="$50",
        stale=["$25", "$35"],
        questions=["What is the missed appointment fee?", "How much do you charge if I miss an appointment?"],
        extra=["The fee is billed to the patient, not to insurance."],
        alias_questions=["What do I pay if I cancel my visit too late?"],
    ),
    Fact(
        key="cancellation-notice-period",
        section="appointments",
        title="Cancellation notice period",
        subject="cancellation notice period",
        claim="Appointments must be cancelled at least {value} in advance to avoid a fee.",
        value="24 hours",
        stale=["48 hours", "72 hours"],
        questions=[
            "What is the cancellation notice period?",
            "How far ahead do I need to cancel an appointment?",
        ],
        extra=["Cancellations can be made by phone or in the patient portal."],
        extra_question="How can I cancel an appointment?",
    ),
    Fact(
        key="new-patient-wait-time",
        section="appointments",
        title="New patient wait time",
        subject="new patient wait time",
        claim="New patients are usually scheduled within {value}.",
        value="2 weeks",
        stale=["4 weeks", "6 weeks"],
        questions=[
            "What is the new patient wait time?",
            "How long is the wait for a new patient appointment?",
        ],
        extra=["Urgent concerns are triaged by a nurse the same day."],
    ),
    Fact(
        key="telehealth-visit-length",
        section="appointments",
        title="Telehealth visit length",
        subject="telehealth visit length",
        claim="A telehealth visit lasts up to {value}.",
        value="20 minutes",
        stale=["15 minutes", "30 minutes"],
        questions=["How long is a telehealth visit?", "What is the telehealth visit length?"],
        extra=["Telehealth visits use the video link sent by text message."],
        alias_questions=["How long do I get with the doctor on a video appointment?"],
    ),
    Fact(
        key="payment-plan-minimum",
        section="billing",
        title="Payment plan minimum",
        subject="payment plan minimum",
        claim="The minimum monthly payment on a payment plan is {value}.",
        value="$25",
        stale=["$50", "$40"],
        questions=[
            "What is the payment plan minimum?",
            "What's the smallest monthly payment on a payment plan?",
        ],
        extra=["Payment plans carry no interest."],
        extra_question="Do payment plans charge interest?",
    ),
    Fact(
        key="itemized-bill-turnaround",
        section="billing",
        title="Itemized bill turnaround",
        subject="itemized bill turnaround",
        claim="An itemized bill is mailed within {value} of the request.",
        value="5 business days",
        stale=["10 business days"],
        questions=["How long does it take to get an itemized bill?", "What is the itemized bill turnaround?"],
        extra=["Itemized bills can also be downloaded from the patient portal."],
    ),
    Fact(
        key="statement-due-period",
        section="billing",
        title="Statement due period",
        subject="statement due period",
        claim="Statements are due {value} after the statement date.",
        value="30 days",
        stale=["45 days", "21 days"],
        questions=["When is my statement due?", "What is the statement due period?"],
        extra=["Unpaid balances go to collections after 120 days."],
        alias_questions=["How long do I have to pay my bill?"],
    ),
    Fact(
        key="refill-processing-time",
        section="pharmacy",
        title="Refill processing time",
        subject="refill processing time",
        claim="Prescription refills are ready within {value} of the request.",
        value="2 business days",
        stale=["3 business days", "5 business days"],
        questions=["What is the refill processing time?", "How long does a prescription refill take?"],
        extra=["You get a text message when the refill is ready."],
    ),
    Fact(
        key="generic-prescription-copay",
        section="pharmacy",
        title="Generic prescription copay",
        subject="generic prescription copay",
        claim="The generic prescription copay is {value} per fill.",
        value="$10",
        stale=["$5", "$8"],
        questions=[
            "What is the generic prescription copay?",
            "How much is the copay on a generic prescription?",
        ],
        extra=["Brand-name drugs are billed at the plan's tier 2 rate."],
        alias_questions=["How much will my refill cost me?"],
    ),
    Fact(
        key="medical-records-request-fee",
        section="records",
        title="Medical records request fee",
        subject="medical records request fee",
        claim="The medical records request fee is {value}.",
        value="$15",
        stale=["$25", "$20"],
        questions=[
            "What is the medical records request fee?",
            "How much does it cost to request my medical records?",
        ],
        extra=["Records sent directly to another provider are free."],
        alias_questions=["What do you charge to release my records?"],
    ),
    Fact(
        key="records-release-time",
        section="records",
        title="Records release time",
        subject="records release time",
        claim="Medical records are released within {value} of a signed request.",
        value="10 days",
        stale=["30 days", "14 days"],
        questions=["What is the records release time?", "How long until my medical records are released?"],
        extra=["A signed authorization form is required."],
        extra_question="What do I need to sign to get my records?",
    ),
    Fact(
        key="portal-message-response-time",
        section="portal",
        title="Portal message response time",
        subject="portal message response time",
        claim="Messages sent in the patient portal are answered within {value}.",
        value="2 business days",
        stale=["3 business days", "1 business day"],
        questions=[
            "What is the portal message response time?",
            "How fast do you answer messages in the patient portal?",
        ],
        extra=["Do not use portal messages for urgent symptoms."],
    ),
    Fact(
        key="lab-result-release-time",
        section="portal",
        title="Lab result release time",
        subject="lab result release time",
        claim="Lab results appear in the patient portal within {value}.",
        value="3 days",
        stale=["7 days", "5 days"],
        questions=[
            "What is the lab result release time?",
            "How long until my lab results show up in the portal?",
        ],
        extra=["Your clinician may call you before results are released."],
        alias_questions=["When will I get a message about my test results?"],
    ),
]

SKILLS = [
    Skill(
        name="register-a-new-patient",
        title="Register a new patient",
        description="Registering a first-time patient before the first visit.",
        steps=[
            "Collect the patient's insurance card and date of birth.",
            "New patients must arrive {value} before their first appointment.",
            "Have the patient sign the consent and privacy forms.",
        ],
        value="20 minutes",
        stale=["10 minutes", "15 minutes"],
        questions=[
            "How early should I arrive for my first appointment?",
            "When do new patients need to get to the clinic?",
        ],
    ),
    Skill(
        name="request-a-prior-authorization",
        title="Request a prior authorization",
        description="Submitting a prior authorization to the patient's insurer.",
        steps=[
            "Confirm the procedure code with the ordering clinician.",
            "Prior authorization requests are decided within {value}.",
            "Tell the patient they will be called once the decision arrives.",
        ],
        value="3 business days",
        stale=["7 business days", "10 business days"],
        questions=[
            "How long does a prior authorization take?",
            "When will I hear back about my prior authorization?",
        ],
    ),
    Skill(
        name="transfer-records-to-another-provider",
        title="Transfer records to another provider",
        description="Sending a patient's chart to an outside clinic.",
        steps=[
            "Verify the signed release form.",
            "Records are sent to the new provider within {value}.",
            "Log the transfer in the release register.",
        ],
        value="5 business days",
        stale=["15 business days"],
        questions=[
            "How long does it take to send my records to a new doctor?",
            "When will my new clinic receive my chart?",
        ],
    ),
    Skill(
        name="set-up-a-payment-plan",
        title="Set up a payment plan",
        description="Splitting a patient balance into monthly payments.",
        steps=[
            "Check that the balance is not already in collections.",
            "Balances up to {value} can be split into a payment plan.",
            "Set the first payment date within 30 days.",
        ],
        value="$5,000",
        stale=["$2,000", "$3,000"],
        questions=[
            "What's the largest balance I can put on a payment plan?",
            "Can I split a big bill into payments, and up to what amount?",
        ],
    ),
    Skill(
        name="request-a-refill",
        title="Request a refill",
        description="Handling a patient's prescription refill request.",
        steps=[
            "Confirm the medication name and dose.",
            "Refill requests need at least {value} of notice.",
            "Send the request to the prescribing clinician.",
        ],
        value="48 hours",
        stale=["72 hours", "24 hours"],
        questions=["How much notice do you need for a refill?", "How far ahead should I ask for a refill?"],
    ),
]

TOOLS = [
    Tool(
        name="book_appointment",
        description="Book a visit for the patient.",
        parameters=[
            "`patient_id`: the patient's chart number.",
            "`visit_type`: `{literal}`, `follow_up` or `telehealth`.",
            "`date`: ISO date.",
        ],
        right="new_patient",
        wrong=["new", "first_visit"],
        requests=[
            "I'd like to book my first appointment with you.",
            "Can you schedule me as a new patient next Monday?",
        ],
        args={"patient_id": "MRN-20417", "visit_type": "{literal}", "date": "2025-06-02"},
        success="Booked: MRN-20417, new_patient, 2025-06-02 09:40.",
        error="Error 422: unsupported value '{wrong}' for field 'visit_type'. Accepted values: '{right}', 'follow_up', 'telehealth'.",
        done_reply="You're booked for Monday, June 2 at 9:40 am.",
    ),
    Tool(
        name="lookup_claim",
        description="Look up the status of an insurance claim.",
        parameters=["`{literal}`: the claim number printed on the statement."],
        right="claim_id",
        wrong=["claim_no", "claim_number"],
        requests=[
            "What's the status of the claim from my March visit?",
            "Has my insurance paid the claim for my last visit?",
        ],
        args={"{literal}": "CLM-88412"},
        success="CLM-88412: paid by insurer on 2025-04-11.",
        error="Error: unrecognized argument '{wrong}' (did you mean '{right}'?)",
        done_reply="Your insurer paid that claim on April 11.",
    ),
    Tool(
        name="send_refill_request",
        description="Send a refill request to the patient's pharmacy.",
        parameters=[
            "`medication`: name and dose.",
            "`pharmacy`: the pharmacy code, for example `{literal}`.",
        ],
        right="RX-014",
        wrong=["Main Street Pharmacy", "MAINST"],
        requests=[
            "Please send a refill of my lisinopril to my pharmacy.",
            "Can you request a refill of my inhaler?",
        ],
        args={"medication": "lisinopril 10 mg", "pharmacy": "{literal}"},
        success="Refill request sent to RX-014.",
        error="Request rejected: '{wrong}' is not a valid pharmacy code. Use '{right}'.",
        done_reply="Your refill request is on its way to the pharmacy.",
    ),
]

POLICIES = [
    Policy(
        instruction="Never give a diagnosis or medical advice; direct clinical questions to the nurse line.",
        questions=[
            "I have a headache and a fever, what do you think it is?",
            "Is this rash something serious?",
        ],
        bad_reply="It sounds like it could be the flu; rest and drink plenty of fluids.",
        good_reply="I can't give medical advice, but our nurse line can help you right away.",
        corrections=[
            "You really shouldn't be diagnosing me. Send me to a nurse instead.",
            "You're not supposed to give medical advice, you should put me through to the nurse line.",
        ],
    ),
    Policy(
        instruction="Confirm the patient's full name and date of birth before sharing appointment or billing details.",
        questions=["When is my next appointment?", "How much do I still owe the clinic?"],
        bad_reply="Your next appointment is on Tuesday at 3 pm with Dr. Patel.",
        good_reply="Before I share that, can you confirm your full name and date of birth?",
        corrections=[
            "Hang on, aren't you supposed to check my date of birth first?",
            "You should have asked for my name and date of birth before telling me that.",
        ],
    ),
    Policy(
        instruction="Tell anyone reporting emergency symptoms such as chest pain to call 911 immediately.",
        questions=[
            "I'm having chest pain, can I book an appointment for next week?",
            "My chest hurts and my arm is numb, when can I come in?",
        ],
        bad_reply="Sure, the first available slot is next Wednesday at 10 am.",
        good_reply="Chest pain can be an emergency: please call 911 right now.",
        corrections=[
            "You need to tell people with chest pain to call 911!",
            "Shouldn't you have told me to call 911 for chest pain?",
        ],
    ),
    Policy(
        instruction="Do not disclose another person's health information, even to family members.",
        questions=[
            "Can you tell me what my husband's test results were?",
            "What medication is my mother taking?",
        ],
        bad_reply="Your husband's cholesterol results came back normal.",
        good_reply="I'm sorry, I can't share another person's health information without their consent.",
        corrections=[
            "You shouldn't share my husband's results with me without his consent.",
            "Wait, you're not allowed to tell me someone else's results, are you?",
        ],
    ),
]

PHRASING = Phrasing(
    stale_corrections=[
        "That's not correct anymore, it's {expected}.",
        "Nope, the clinic updated that. It's {expected} now.",
        "I was told it's {expected}, not {got}.",
        "Your information is outdated. It's {expected}.",
        "The {subject} changed to {expected} this year.",
        "That can't be right. The {subject} is {expected}.",
    ],
    gap_corrections=[
        "It's {expected}, I checked with the front desk.",
        "The {subject} is {expected}. Odd that you don't know.",
        "It's {expected}. Can you add that?",
    ],
    rf_corrections=[
        "That's a different thing. The {subject} is {expected}.",
        "No, I asked about the {subject}. It's {expected}.",
    ],
    tool_complaints=[
        "This isn't working. What's going on?",
        "Why does this keep erroring out?",
        "I've been trying for ten minutes, this is annoying.",
    ],
    answer_prefixes=["", "Our records show that ", "Per clinic policy, ", "Here's what I found: "],
    gap_replies=[
        "I wasn't able to find information on the {subject}.",
        "Our knowledge base doesn't seem to cover the {subject}.",
    ],
    acknowledgements=[
        "Sorry about that, the {subject} is {expected}.",
        "Thank you, I've noted that the {subject} is {expected}.",
    ],
    tool_failure_replies=[
        "Something went wrong while submitting your request.",
        "I hit an error and couldn't complete that.",
    ],
    thanks=["Thank you so much.", "Got it, thanks.", "That helps, thanks!"],
    welcome=["Glad I could help.", "Anytime!"],
    give_up=["Never mind, I'll just phone the clinic.", "I'll sort it out at the front desk."],
    control_openers=["Also, {question}", "Okay. {question}", "Next question: {question}", "{question}"],
    reasoning=[
        "Let me search for the {subject}.",
        "I'll look up the {subject} in the clinic knowledge base.",
    ],
)

DOMAIN = Domain(
    name="healthcare_admin",
    organization="Riverside Health Clinic",
    system_intro=(
        "You are the patient services assistant of Riverside Health Clinic. Help patients with "
        "appointments, billing, insurance, prescriptions and medical records, using the knowledge "
        "base, the clinic's procedures and the scheduling and billing tools."
    ),
    facts=FACTS,
    skills=SKILLS,
    tools=TOOLS,
    policies=POLICIES,
    phrasing=PHRASING,
)
