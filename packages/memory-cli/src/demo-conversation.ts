/** One completed turn of the sample conversation. */
export interface DemoTurn {
  user: string;
  assistant: string;
}

/** A note the agent saves with the built-in `memory` tool during a session (as a model would). */
export interface DemoMemoryNote {
  target: "memory" | "user";
  content: string;
}

/** One session of the sample conversation. */
export interface DemoSession {
  id: string;
  title: string;
  turns: DemoTurn[];
  notes: DemoMemoryNote[];
}

/** A question asked after a restart, about a fact from session one. */
export interface DemoQuestion {
  question: string;
  /** The fact, as the user stated it. */
  fact: string;
  /** Words that must all appear (case-insensitively) in the recall for it to count as recalled. */
  expect: string[];
}

/** The sample conversation shipped with the CLI: two sessions, three questions. */
export interface DemoConversation {
  sessions: DemoSession[];
  questions: DemoQuestion[];
}

/**
 * Two sessions with distinctive facts (names, numbers, places a model could not guess), then three
 * questions about facts from session one. Session two is about other things, so recall has to
 * pick the right session-one turns rather than whatever is newest.
 */
export const DEMO_CONVERSATION: DemoConversation = {
  sessions: [
    {
      id: "demo-session-1",
      title: "Trip planning and the staging database",
      turns: [
        {
          user: "My sister Anneliese is flying in from Tromsø on March 14th, can you remind me to book the airport shuttle?",
          assistant: "Noted: Anneliese arrives from Tromsø on March 14th. I'll remind you to book the airport shuttle before then.",
        },
        {
          user: "Also, I'm allergic to cashews, so skip any restaurant suggestions with cashew sauces.",
          assistant: "Understood, no cashews. I'll avoid restaurants known for cashew-based sauces.",
        },
        {
          user: "Work question: our staging database for the billing service runs Postgres on port 6543, not the default.",
          assistant: "Got it: the billing service's staging Postgres listens on port 6543.",
        },
        {
          user: "Can you draft a connection string for it? The host is pg-staging.internal and the database is billing_stage.",
          assistant:
            "postgresql://<user>@pg-staging.internal:6543/billing_stage — fill in your user and keep the password in your secret store.",
        },
      ],
      notes: [
        { target: "user", content: "Sister Anneliese visits from Tromsø, arriving March 14th (book the airport shuttle)." },
        { target: "user", content: "Allergic to cashews: never suggest dishes with cashew sauce." },
        { target: "memory", content: "Billing service staging Postgres: pg-staging.internal port 6543, database billing_stage." },
      ],
    },
    {
      id: "demo-session-2",
      title: "Garden and reading list",
      turns: [
        {
          user: "I planted three rows of purple carrots and some Thai basil on the balcony this weekend.",
          assistant: "Nice! Purple carrots like deep pots; Thai basil wants sun and regular pinching.",
        },
        {
          user: "Add 'The Left Hand of Darkness' to my reading list, I want to start it next.",
          assistant: "Added 'The Left Hand of Darkness' to your reading list as the next book.",
        },
        {
          user: "How often should I water the basil when it's hot?",
          assistant: "In hot weather, water the Thai basil daily in the morning, keeping the soil moist but not soggy.",
        },
      ],
      notes: [{ target: "user", content: "Reading next: The Left Hand of Darkness." }],
    },
  ],
  questions: [
    {
      question: "When is my sister arriving, and from where?",
      fact: "Anneliese arrives from Tromsø on March 14th",
      expect: ["Anneliese", "March 14th"],
    },
    {
      question: "Which foods am I allergic to?",
      fact: "allergic to cashews",
      expect: ["cashew"],
    },
    {
      question: "What port does the billing staging database use?",
      fact: "staging Postgres on port 6543",
      expect: ["6543"],
    },
  ],
};

/** True when `recalled` mentions every expected word of `question` (case-insensitive). */
export function recallMentions(recalled: string, question: DemoQuestion): boolean {
  const text = recalled.toLowerCase();
  return question.expect.every((word) => text.includes(word.toLowerCase()));
}
