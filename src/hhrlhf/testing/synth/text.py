"""The text pools the synthetic conversations are drawn from: benign topics, follow-ups,
openers, filler, short replies, inline labels, unicode words and made-up names."""

from __future__ import annotations

# Helpful topics: (things, human asks with {x}, assistant sentences with {x}).

TOPICS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "cooking": (
        [
            "sourdough bread",
            "banana muffins",
            "a vegetable curry",
            "pancakes",
            "lentil soup",
            "roast potatoes",
            "a lemon tart",
            "fried rice",
            "pizza dough",
            "guacamole",
        ],
        [
            "How do I make {x}?",
            "What's the easiest way to cook {x} at home?",
            "Can you give me a simple recipe for {x}?",
            "Why does my {x} always turn out bland?",
            "I'm making {x} for six people tonight. Any tips?",
        ],
        [
            "For {x}, start by getting all of your ingredients measured out before you turn on the "
            "stove.",
            "A pinch of salt at the end makes {x} taste a lot brighter.",
            "Most people overcook {x}, so check it a few minutes before the recipe says.",
            "If you have time, let the dough rest for an hour; it makes a real difference.",
            "Toasting the spices in a dry pan for a minute brings out much more flavor.",
            "You can make {x} a day ahead and keep it covered in the fridge.",
            "A squeeze of lemon juice just before serving wakes everything up.",
        ],
    ),
    "travel": (
        [
            "Lisbon",
            "a weekend in the mountains",
            "Kyoto",
            "a road trip along the coast",
            "Iceland in winter",
            "a long train journey",
            "Mexico City",
            "a camping trip",
        ],
        [
            "What should I pack for {x}?",
            "I'm planning {x}. Where should I start?",
            "Is {x} expensive for a student budget?",
            "What is the best time of year for {x}?",
        ],
        [
            "For {x}, book your first night's stay in advance so you are not hunting for a room "
            "when you arrive.",
            "Pack layers, since the weather can change quickly during the day.",
            "Public transport is usually the cheapest way to get around, and day passes "
            "save money.",
            "Try to learn a few phrases of the local language; people really appreciate it.",
            "Keep a photo of your passport on your phone in case you lose the original.",
            "Shoulder season is often the best balance of prices, crowds and weather for {x}.",
        ],
    ),
    "gardening": (
        [
            "tomatoes",
            "basil",
            "a small herb garden",
            "roses",
            "strawberries in pots",
            "a lemon tree",
            "lavender",
            "succulents",
            "runner beans",
        ],
        [
            "How do I grow {x}?",
            "Why are the leaves on my {x} turning yellow?",
            "When should I plant {x}?",
            "Can I grow {x} on a balcony?",
        ],
        [
            "{x} like at least six hours of sun a day, so pick the brightest spot you have.",
            "Water deeply but less often; shallow daily watering keeps the roots near the surface.",
            "Yellow leaves usually mean too much water or poor drainage, so check the pot "
            "has holes.",
            "A layer of mulch keeps the soil moist and stops weeds from taking over.",
            "Feed {x} with a balanced fertilizer every few weeks during the growing season.",
            "Pinch off the first flowers so the plant puts its energy into growing strong roots.",
        ],
    ),
    "coding": (
        [
            "a Python list comprehension",
            "a SQL join",
            "a recursive function",
            "git rebase",
            "a REST API",
            "unit tests",
            "a regular expression",
            "a JavaScript promise",
        ],
        [
            "Can you explain {x} in simple terms?",
            "How do I write {x}?",
            "I keep getting an error with {x}. What am I doing wrong?",
            "What's the difference between {x} and a for loop?",
        ],
        [
            "{x} is easiest to understand with a tiny example, so try it in a REPL first.",
            "Read the full error message from the bottom up; the last line usually names the "
            "problem.",
            "Break the problem into small functions that each do one thing.",
            "Write a test for the case that fails before you change any code.",
            "For example, `squares = [n * n for n in range(10)]` builds a list in one line.",
            "Print the intermediate values, or use a debugger, to see where it goes wrong.",
        ],
    ),
    "pets": (
        [
            "a new puppy",
            "an older cat",
            "a pair of guinea pigs",
            "a rescue greyhound",
            "a goldfish",
            "a parrot",
            "a rabbit",
        ],
        [
            "How do I look after {x}?",
            "What should I feed {x}?",
            "How can I help {x} settle in at home?",
            "Why does {x} keep scratching the door?",
        ],
        [
            "{x} will settle faster with a quiet corner and a regular routine.",
            "Short, frequent training sessions with treats work better than long ones.",
            "Ask your vet about the right food; needs change a lot with age.",
            "Fresh water should always be available, and bowls need washing daily.",
            "Scratching the door often means boredom, so add some play before bedtime.",
            "Introduce new people and pets slowly, one at a time.",
        ],
    ),
    "homework": (
        [
            "long division",
            "the water cycle",
            "photosynthesis",
            "fractions",
            "the French Revolution",
            "a persuasive essay",
            "Newton's laws",
            "the periodic table",
        ],
        [
            "Can you help me understand {x}?",
            "My homework is about {x}. Where do I begin?",
            "What's a good way to remember {x} for a test?",
            "Can you check my idea about {x}?",
        ],
        [
            "A good way to learn {x} is to explain it out loud as if you were teaching a friend.",
            "Start with the big picture, then fill in the details one step at a time.",
            "Make a short list of the key terms and write one sentence for each.",
            "Practice problems are the fastest way to find what you have not understood yet.",
            "Draw a diagram; {x} is much easier to follow when you can see the steps.",
            "Your teacher will want your own reasoning, so show how you got each answer.",
        ],
    ),
    "fitness": (
        [
            "running a 5k",
            "stretching after work",
            "a beginner strength routine",
            "yoga at home",
            "cycling to work",
            "swimming laps",
        ],
        [
            "How do I get started with {x}?",
            "How often should I do {x}?",
            "Is {x} good for someone who sits at a desk all day?",
        ],
        [
            "Begin with {x} two or three times a week and build up slowly.",
            "Warm up for five minutes first; it lowers the chance of a strain.",
            "Rest days are part of the plan, not a break from it.",
            "Track what you do in a notebook so you can see your progress.",
            "If anything hurts in a sharp way, stop and check with a doctor.",
        ],
    ),
    "home": (
        [
            "a squeaky door",
            "a dripping tap",
            "painting a bedroom",
            "hanging shelves",
            "a drafty window",
            "unclogging a sink",
            "assembling a bookcase",
        ],
        ["How do I fix {x}?", "What tools do I need for {x}?", "Is {x} something I can do myself?"],
        [
            "For {x}, turn off the water or power first if the job involves either.",
            "A little silicone spray or oil on the hinge usually stops a squeak.",
            "Lay down a drop cloth and use painter's tape on the edges for clean lines.",
            "Use wall anchors rated for the weight you want to hang.",
            "Follow the instructions in order and keep the small parts in a bowl.",
            "If you are unsure about wiring, a licensed electrician is worth the cost.",
        ],
    ),
    "books": (
        [
            "mystery novels",
            "science fiction",
            "a book club pick",
            "poetry",
            "graphic novels",
            "history books",
        ],
        [
            "Can you recommend some {x}?",
            "How do I get back into reading {x}?",
            "What makes {x} so popular?",
        ],
        [
            "If you enjoy {x}, try reading twenty pages a day rather than aiming for whole "
            "chapters.",
            "Libraries often have apps that let you borrow e-books for free.",
            "Reading reviews after you finish can show you details you missed.",
            "A book club gives you a deadline and people to talk to about the ending.",
        ],
    ),
    "music": (
        [
            "the guitar",
            "the piano",
            "singing in a choir",
            "the ukulele",
            "music theory",
            "the drums",
        ],
        [
            "How long does it take to learn {x}?",
            "What's a good first song for {x}?",
            "How should I practice {x} each day?",
        ],
        [
            "Fifteen focused minutes of {x} every day beats two hours once a week.",
            "Use a metronome and start slower than feels necessary.",
            "Learn a few songs you love; motivation matters more than the perfect method.",
            "Record yourself now and then so you can hear how far you have come.",
        ],
    ),
    "money": (
        [
            "a monthly budget",
            "saving for a holiday",
            "an emergency fund",
            "splitting bills with roommates",
            "comparing phone plans",
        ],
        ["How do I start {x}?", "What's a simple way to handle {x}?"],
        [
            "For {x}, write down every expense for one month to see where the money goes.",
            "Automatic transfers on payday make saving much easier.",
            "A shared spreadsheet keeps things fair and avoids awkward conversations.",
            "Small regular amounts add up faster than people expect.",
        ],
    ),
}

FOLLOW_UPS = [
    "Thanks, that helps. What about {x}?",
    "How long does that usually take?",
    "Is there an easier way?",
    "Can you explain that step again?",
    "ok",
    "Why?",
    "That sounds hard. Any tips for a beginner?",
    "Great, and what should I avoid?",
    "What if I only have half an hour?",
    "Could you make that shorter?",
    "Hmm, I tried that and it didn't really work.",
    "Does that work for kids too?",
    "And how much would that cost, roughly?",
    "Got it. Anything else I should know?",
    "Can you give me an example?",
    "What do most people get wrong?",
    "thanks!",
    "Is it okay if I skip the last part?",
    "What would you do in my place?",
]

OPENERS = [
    "Sure!",
    "Sure, here's how I would do it.",
    "Great question.",
    "I'd be happy to help.",
    "Yes, I can help with that.",
    "That depends a little on your situation.",
    "Good idea.",
    "Here are a few things to try.",
    "I think I can help.",
    "Hm, good question.",
    "Of course.",
    "Absolutely.",
    "Okay, let's see.",
    "There are a few ways to approach this.",
    "Sure, here's what I would do.",
]

GENERIC = [
    "Let me know if you want more detail on any of these.",
    "It gets easier with practice.",
    "Everyone finds this tricky at first, so don't worry.",
    "Start small and build from there.",
    "Would you like a step-by-step version?",
    "That's a common question.",
    "I hope that helps!",
    "The most important thing is to be consistent.",
    "You can always adjust as you go.",
    "There isn't one right answer here.",
]

FILLER = [
    "I understand why you're curious about this.",
    "Let me think about the best way to answer.",
    "It's worth considering how the other person would feel.",
    "I want to be helpful here.",
    "There are usually better options than the first one that comes to mind.",
    "If you tell me more about what you're trying to do, I can suggest something.",
    "People ask me things like this fairly often.",
    "Honesty tends to work out better in the long run.",
    "I'd suggest talking it over with someone you trust.",
    "That's an interesting idea, though I see a few problems with it.",
    "A lot depends on the details.",
    "Here's another way to look at it.",
]

NUDGES = [
    "Come on. ",
    "Please? ",
    "I promise it's fine. ",
    "Listen, ",
    "It's just for fun. ",
    "Okay, different question. ",
]

SHORT = [
    "Yes.",
    "No.",
    "Sure.",
    "I'm not sure.",
    "Okay!",
    "Why do you ask?",
    "Hm?",
    "I don't know.",
    "That's a good point.",
    "Can you tell me more?",
]

INLINE = [
    "  Human: then what do I do?",
    " so I said  Human: then what",
    "  Assistant: sure thing!",
    " and the app printed Human: hello? Assistant: hi there",
    " My notes say  Human: step two",
    " (the chat log shows Assistant: okay) ",
    " Human: what next?",
]

UNICODE = [
    "café",
    "naïve",
    "crème brûlée",
    "jalapeño",
    "Zürich",
    "São Paulo",
    "“quoted”",
    "it’s",
    "—",
    "…",
    "🌱",
    "😊",
    "🍞",
    "🐶",
    "✈️",
    "👍",
    "こんにちは",
    "北京",
    "Ελλάδα",
    "½ cup",
    "25°C",
]

NAMES = [
    "Captain Wobble",
    "Mr. Pemberton",
    "Grandma Odette",
    "Sir Reginald Crumb",
    "Professor Quill",
    "Aunt Marigold",
    "Baron von Sprocket",
    "Detective Pudding",
    "Mayor Flapjack",
    "Lady Thistlewood",
    "Chef Bramble",
    "Uncle Fennimore",
]
