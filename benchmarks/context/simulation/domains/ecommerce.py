"""E-commerce (online retailer support) domain: held out.

Written after all tuning of the pipeline was finished; the pipeline was not changed after seeing
its results (reported in ``docs/context.md``). One data fix was made after the first run, because
the benchmark's own verification rejected it: the ``apply_coupon`` error did not name the right
parameter, so the expected fix was not derivable from the session.
"""

from __future__ import annotations

from benchmarks.context.simulation.domain import Domain, Fact, Phrasing, Policy, Skill, Tool

FACTS = [
    Fact(
        key="standard-shipping-time",
        section="shipping",
        title="Standard shipping time",
        subject="standard shipping time",
        claim="Standard shipping takes {value}.",
        value="5 business days",
        stale=["7 business days"],
        questions=["How long does standard shipping take?", "what's the standard shipping time"],
        extra=["Orders placed before noon leave the warehouse the same day."],
        extra_question="When does my order leave the warehouse?",
        alias_questions=["when will my package get here if I pick the cheapest delivery?"],
    ),
    Fact(
        key="free-shipping-threshold",
        section="shipping",
        title="Free shipping threshold",
        subject="free shipping threshold",
        claim="Orders over {value} ship free.",
        value="$50",
        stale=["$35", "$75"],
        questions=["What is the free shipping threshold?", "How much do I need to spend for free shipping?"],
        extra=["The threshold applies before taxes."],
    ),
    Fact(
        key="express-shipping-fee",
        section="shipping",
        title="Express shipping fee",
        subject="express shipping fee",
        claim="Express shipping costs {value} per order.",
        value="$15",
        stale=["$12", "$20"],
        questions=["What is the express shipping fee?", "How much is express shipping?"],
        extra=["Express orders arrive in 2 business days."],
        alias_questions=["how much extra to get my order faster?"],
    ),
    Fact(
        key="return-window",
        section="returns",
        title="Return window",
        subject="return window",
        claim="Items can be returned within {value} of delivery.",
        value="30 days",
        stale=["14 days", "60 days"],
        questions=["What's the return window?", "How long do I have to return something?"],
        extra=["Final-sale items cannot be returned."],
        extra_question="Can I return final-sale items?",
        alias_questions=["How long do I have to get a refund for an item?"],
    ),
    Fact(
        key="refund-processing-time",
        section="returns",
        title="Refund processing time",
        subject="refund processing time",
        claim="Refunds are issued within {value} of receiving the return.",
        value="5 business days",
        stale=["10 business days"],
        questions=["What is the refund processing time?", "How long do refunds take once you get my return?"],
        extra=["Refunds go back to the original payment method."],
        alias_questions=["how long until I see my money back?"],
    ),
    Fact(
        key="restocking-fee",
        section="returns",
        title="Restocking fee",
        subject="restocking fee",
        claim="Opened electronics carry a restocking fee of {value}.",
        value="15%",
        stale=["20%", "10%"],
        questions=["Is there a restocking fee?", "What's the restocking fee on opened electronics?"],
        extra=["Unopened items have no restocking fee."],
        alias_questions=["Do you charge anything if I return something I opened?"],
    ),
    Fact(
        key="gift-card-expiry",
        section="payments",
        title="Gift card expiry",
        subject="gift card expiry",
        claim="Gift cards expire {value} after purchase.",
        value="5 years",
        stale=["2 years", "1 year"],
        questions=["When do gift cards expire?", "What is the gift card expiry?"],
        extra=["Gift card balances can be checked on the account page."],
    ),
    Fact(
        key="installment-minimum",
        section="payments",
        title="Installment minimum",
        subject="installment minimum",
        claim="Pay-in-4 installments are available on orders over {value}.",
        value="$35",
        stale=["$50"],
        questions=["What is the installment minimum?", "What's the minimum order for pay-in-4?"],
        extra=["Installments are charged every two weeks."],
        extra_question="How often are pay-in-4 installments charged?",
    ),
    Fact(
        key="order-cancellation-window",
        section="orders",
        title="Order cancellation window",
        subject="order cancellation window",
        claim="Orders can be cancelled within {value} of being placed.",
        value="1 hour",
        stale=["30 minutes", "24 hours"],
        questions=["What is the order cancellation window?", "How long do I have to cancel an order?"],
        extra=["After that, return the item once it arrives."],
        alias_questions=["can I still change my mind after ordering?"],
    ),
    Fact(
        key="price-match-period",
        section="orders",
        title="Price match period",
        subject="price match period",
        claim="We match lower prices for {value} after purchase.",
        value="14 days",
        stale=["7 days"],
        questions=["What is the price match period?", "How long after buying can I ask for a price match?"],
        extra=["Marketplace sellers are excluded from price matching."],
    ),
    Fact(
        key="loyalty-points-expiry",
        section="loyalty",
        title="Loyalty points expiry",
        subject="loyalty points expiry",
        claim="Reward points expire after {value} without account activity.",
        value="12 months",
        stale=["6 months", "18 months"],
        questions=["When do loyalty points expire?", "How long before my reward points expire?"],
        extra=["Each dollar spent earns one point."],
        extra_question="How many points do I earn per dollar?",
    ),
    Fact(
        key="birthday-discount",
        section="loyalty",
        title="Birthday discount",
        subject="birthday discount",
        claim="Members get a {value} birthday discount.",
        value="20%",
        stale=["15%", "10%"],
        questions=["What is the birthday discount?", "How much is the member birthday discount?"],
        extra=["The birthday code is valid for the whole birthday month."],
    ),
    Fact(
        key="verification-code-validity",
        section="account",
        title="Verification code validity",
        subject="verification code validity",
        claim="Two-step verification codes are valid for {value}.",
        value="10 minutes",
        stale=["3 minutes", "5 minutes"],
        questions=["How long is a verification code valid?", "What is the verification code validity?"],
        extra=["Codes are sent by text or e-mail."],
    ),
    Fact(
        key="student-discount",
        section="account",
        title="Student discount",
        subject="student discount",
        claim="Verified students get {value} off full-price items.",
        value="10%",
        stale=["15%"],
        questions=["What is the student discount?", "How much off do students get?"],
        extra=["Student status is verified once a year."],
    ),
]

SKILLS = [
    Skill(
        name="process-a-damaged-item-claim",
        title="Process a damaged item claim",
        description="Handling an item that arrived damaged.",
        steps=[
            "Ask the customer for a photo of the damage.",
            "Damage claims must be filed within {value} of delivery.",
            "Offer a replacement or a refund.",
        ],
        value="48 hours",
        stale=["7 days", "24 hours"],
        questions=["How long do I have to report a damaged item?", "what's the deadline for a damage claim?"],
    ),
    Skill(
        name="issue-a-replacement-order",
        title="Issue a replacement order",
        description="Sending a replacement for a damaged or wrong item.",
        steps=[
            "Confirm the original order number.",
            "Replacement orders ship within {value}.",
            "E-mail the customer the new tracking number.",
        ],
        value="1 business day",
        stale=["3 business days"],
        questions=["How fast do replacement orders ship?", "when will my replacement ship?"],
    ),
    Skill(
        name="handle-a-lost-package",
        title="Handle a lost package",
        description="When tracking has stopped updating.",
        steps=[
            "Check the carrier's tracking page.",
            "Packages count as lost after {value} without a tracking update.",
            "Reship the order or refund it.",
        ],
        value="7 days",
        stale=["14 days", "10 days"],
        questions=["When is a package considered lost?", "how long before you treat my package as lost?"],
    ),
    Skill(
        name="apply-a-price-adjustment",
        title="Apply a price adjustment",
        description="Refunding the difference when a price drops.",
        steps=[
            "Check that the item is sold by us, not a marketplace seller.",
            "Price adjustments are capped at {value} per order.",
            "Refund the difference to the original payment method.",
        ],
        value="$100",
        stale=["$50", "$200"],
        questions=[
            "Is there a limit on price adjustments?",
            "What's the maximum price adjustment per order?",
        ],
    ),
]

TOOLS = [
    Tool(
        name="create_return",
        description="Open a return for an order line.",
        parameters=[
            "`order_id`: the order number.",
            "`reason_code`: `{literal}` for damaged items, `WRONG_ITEM` or `NOT_NEEDED`.",
        ],
        right="DAMAGED",
        wrong=["broken", "damage"],
        requests=[
            "My lamp arrived broken, I want to return it.",
            "I need to send back a cracked mug from order 5512.",
        ],
        args={"order_id": "5512", "reason_code": "{literal}"},
        success="Return RMA-7781 created.",
        error='{"error": "invalid_request", "message": "reason_code \'{wrong}\' is not allowed; allowed: DAMAGED, WRONG_ITEM, NOT_NEEDED"}',
        done_reply="Your return RMA-7781 is open; a label is on its way.",
    ),
    Tool(
        name="apply_coupon",
        description="Apply a coupon to the customer's cart.",
        parameters=["`{literal}`: the code the customer typed."],
        right="coupon_code",
        wrong=["promo_code", "code"],
        requests=["Can you apply my code SPRING10?", "please add the coupon WELCOME5 to my cart"],
        args={"{literal}": "SPRING10"},
        success="Coupon SPRING10 applied: 10% off.",
        error="TypeError: apply_coupon() got an unexpected keyword argument '{wrong}' (parameters: '{right}')",
        done_reply="Done, the coupon is applied to your cart.",
    ),
    Tool(
        name="track_package",
        description="Look up a package's delivery status.",
        parameters=["`{literal}`: the carrier's number for the package."],
        right="tracking_number",
        wrong=["order_id", "order_number"],
        requests=["Where is my package?", "can you track my delivery? it's late"],
        args={"{literal}": "1Z999AA10123456784"},
        success="In transit, expected tomorrow.",
        error="422 Unprocessable Entity - missing required field '{right}'; unexpected field '{wrong}'",
        done_reply="Your package is in transit and expected tomorrow.",
    ),
]

POLICIES = [
    Policy(
        instruction="Never show a customer's full card number; show only the last four digits.",
        questions=[
            "What card did I pay with for my last order?",
            "Which credit card is saved on my account?",
        ],
        bad_reply="You paid with card 4111 1111 1111 1234.",
        good_reply="You paid with the card ending in 1234.",
        corrections=[
            "Whoa, you just showed my entire card number. That's not okay.",
            "You shouldn't display my full card number.",
        ],
    ),
    Policy(
        instruction="Offer a prepaid return label for damaged or wrong items.",
        questions=[
            "My blender arrived cracked, how do I send it back?",
            "I got the wrong size, how do I return it?",
        ],
        bad_reply="You can ship it back to our warehouse at your own cost.",
        good_reply="Sorry about that! I've e-mailed you a prepaid return label.",
        corrections=[
            "Shouldn't you give me a prepaid label since it arrived broken?",
            "You're supposed to send a free return label for damaged items.",
        ],
    ),
    Policy(
        instruction="Do not promise delivery dates for backordered items.",
        questions=[
            "When will my backordered sofa arrive?",
            "Can you guarantee my backordered desk comes this week?",
        ],
        bad_reply="It will definitely arrive this Friday.",
        good_reply="It's backordered, so I can't promise a date, but I'll e-mail you as soon as it ships.",
        corrections=[
            "you can't promise that, it's backordered",
            "How can you guarantee that if it's on backorder?",
        ],
    ),
    Policy(
        instruction="Always remind customers to keep the original packaging for returns.",
        questions=[
            "I want to return my headphones, anything I should know?",
            "Planning to return a blender, what should I do?",
        ],
        bad_reply="Sure, just send them back.",
        good_reply="Please keep the original packaging; returns need it.",
        corrections=[
            "You forgot to mention I need the original box.",
            "you should have told me to keep the packaging",
        ],
    ),
]

PHRASING = Phrasing(
    stale_corrections=[
        "That is not correct; it was changed to {expected}.",
        "Wrong, it's {expected}.",
        "Your site says {expected} now.",
        "It used to be {got} but it's {expected} now.",
        "I believe the {subject} is {expected}, not {got}.",
    ],
    gap_corrections=[
        "It is {expected}.",
        "According to your own FAQ it's {expected}.",
        "{expected}, as far as I know.",
    ],
    rf_corrections=[
        "Not that. The {subject} is {expected}.",
        "You answered the wrong question, the {subject} is {expected}.",
    ],
    tool_complaints=["That didn't work.", "Error again?", "Please fix this, I've tried three times."],
    answer_prefixes=["", "Per our policy, ", "Sure, ", "According to our help center, "],
    gap_replies=[
        "I don't have details on the {subject}.",
        "I'm afraid I couldn't locate anything about the {subject}.",
    ],
    acknowledgements=[
        "Apologies, the {subject} is {expected}.",
        "You're correct, the {subject} is {expected}.",
    ],
    tool_failure_replies=["I'm sorry, that request didn't go through.", "The request failed."],
    thanks=["Thanks!", "Appreciate it.", "Great."],
    welcome=["You're welcome.", "Happy shopping!"],
    give_up=["I'll just email support.", "Never mind."],
    control_openers=["Another question: {question}", "{question}", "Also - {question}"],
    reasoning=["Checking the help center for the {subject}.", "Let me find the {subject}."],
)

DOMAIN = Domain(
    name="ecommerce",
    organization="Larkspur Home Goods",
    system_intro=(
        "You are the customer support assistant of Larkspur Home Goods, an online retailer. Help "
        "customers with orders, shipping, returns, payments and the loyalty program, using the help "
        "center articles, support procedures and order tools."
    ),
    facts=FACTS,
    skills=SKILLS,
    tools=TOOLS,
    policies=POLICIES,
    phrasing=PHRASING,
)
