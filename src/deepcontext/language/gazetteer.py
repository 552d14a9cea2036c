"""Word lists for the rule-based extractor: names, places, organisations, technology, events. The
common words (grammar words, and common nouns such as kin and jobs) are
:mod:`deepcontext.language.common_words`, re-exported here.

Everything here is plain data built once at import (frozensets and dicts, a few thousand strings).
Lookups are by exact surface form (``COUNTRIES``...) or by lower-cased form (``*_LOWER`` and the
``TECH_CI`` table, which only holds names that are unambiguous even when written in lower case:
"python" and "kubernetes" are technology, "rust", "go" and "swift" are not).
"""

from __future__ import annotations

from deepcontext.language.common_words import (
    ADVERBS,
    CONTENT_STOP,
    HAS_NOUNS,
    IMPERATIVE_VERBS,
    INSTRUMENTS_SPORTS,
    IRREGULAR_PARTICIPLES,
    IRREGULAR_PAST,
    JOB_NOUNS,
    KIN,
    KIN_GENDER,
    NOT_NOUN_AFTER,
    NOT_PAST_ED,
    PET_NOUNS,
    REQUEST_VERBS,
    STOPCAPS,
    STOPCAPS_ALWAYS,
    words,
)

__all__ = [
    "ADVERBS",
    "CITIES",
    "COMPANIES",
    "CONTENT_STOP",
    "COUNTRIES",
    "EVENT_NAMES",
    "EVENT_SUFFIXES",
    "FIRST_NAMES",
    "HAS_NOUNS",
    "IMPERATIVE_VERBS",
    "INSTRUMENTS_SPORTS",
    "IRREGULAR_PARTICIPLES",
    "IRREGULAR_PAST",
    "JOB_NOUNS",
    "KIN",
    "KIN_GENDER",
    "LANGUAGES",
    "LOCATION_HEADS",
    "LOCATION_SUFFIXES",
    "LOCATION_WORDS",
    "MULTIWORD",
    "NATIONALITIES",
    "NOT_NOUN_AFTER",
    "NOT_PAST_ED",
    "ORG_HEADS",
    "ORG_SUFFIXES",
    "PET_NOUNS",
    "PRODUCTS",
    "REQUEST_VERBS",
    "STOPCAPS",
    "STOPCAPS_ALWAYS",
    "TECH",
    "TECH_CI",
    "TITLES",
    "US_STATES",
    "words",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip() for w in text.split("|") if w.strip()) if "|" in text else frozenset(text.split())


COUNTRIES = _words(
    """Afghanistan|Albania|Algeria|Andorra|Angola|Argentina|Armenia|Australia|Austria|Azerbaijan|Bahamas|
    Bahrain|Bangladesh|Barbados|Belarus|Belgium|Belize|Benin|Bhutan|Bolivia|Bosnia|Botswana|Brazil|Brunei|
    Bulgaria|Burkina Faso|Burundi|Cambodia|Cameroon|Canada|Chad|Chile|China|Colombia|Congo|Costa Rica|Croatia|
    Cuba|Cyprus|Czechia|Czech Republic|Denmark|Djibouti|Dominican Republic|Ecuador|Egypt|El Salvador|England|
    Eritrea|Estonia|Eswatini|Ethiopia|Fiji|Finland|France|Gabon|Gambia|Georgia|Germany|Ghana|Greece|Greenland|
    Guatemala|Guinea|Guyana|Haiti|Honduras|Hong Kong|Hungary|Iceland|India|Indonesia|Iran|Iraq|Ireland|Israel|
    Italy|Ivory Coast|Jamaica|Japan|Jordan|Kazakhstan|Kenya|Korea|South Korea|North Korea|Kosovo|Kuwait|
    Kyrgyzstan|Laos|Latvia|Lebanon|Lesotho|Liberia|Libya|Liechtenstein|Lithuania|Luxembourg|Madagascar|Malawi|
    Malaysia|Maldives|Mali|Malta|Mauritania|Mauritius|Mexico|Moldova|Monaco|Mongolia|Montenegro|Morocco|
    Mozambique|Myanmar|Namibia|Nepal|Netherlands|Holland|New Zealand|Nicaragua|Niger|Nigeria|North Macedonia|
    Norway|Oman|Pakistan|Palestine|Panama|Papua New Guinea|Paraguay|Peru|Philippines|Poland|Portugal|
    Puerto Rico|Qatar|Romania|Russia|Rwanda|Samoa|San Marino|Saudi Arabia|Scotland|Senegal|Serbia|Seychelles|
    Sierra Leone|Singapore|Slovakia|Slovenia|Somalia|South Africa|South Sudan|Spain|Sri Lanka|Sudan|Suriname|
    Sweden|Switzerland|Syria|Taiwan|Tajikistan|Tanzania|Thailand|Togo|Tonga|Trinidad|Tunisia|Turkey|Turkiye|
    Turkmenistan|Uganda|Ukraine|United Arab Emirates|UAE|United Kingdom|UK|United States|USA|US|U.S.|
    United States of America|America|Uruguay|Uzbekistan|Vanuatu|Vatican|Venezuela|Vietnam|Wales|Yemen|Zambia|
    Zimbabwe|Europe|Asia|Africa|North America|South America|Latin America|Antarctica|Oceania|Scandinavia|
    Middle East|Caribbean|Balkans|Siberia|Patagonia|Bavaria|Tuscany|Catalonia|Andalusia|Provence|Normandy|
    Brittany|Sicily|Sardinia|Bali|Hawaii|Alaska|Iberia"""
)

US_STATES = _words(
    """Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|
    Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|
    Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|
    North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|
    Utah|Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming|Ontario|Quebec|British Columbia|Alberta|
    Manitoba|Nova Scotia|Queensland|Victoria|New South Wales|Tasmania"""
)

CITIES = _words(
    """New York City|NYC|Los Angeles|LA|San Francisco|SF|San Diego|San Jose|Seattle|Portland|Chicago|Boston|
    Houston|Dallas|Austin|San Antonio|Denver|Phoenix|Las Vegas|Miami|Orlando|Tampa|Atlanta|Nashville|Memphis|
    New Orleans|Philadelphia|Pittsburgh|Baltimore|Washington DC|Washington D.C.|Detroit|Cleveland|Columbus|
    Cincinnati|Indianapolis|Milwaukee|Minneapolis|St. Louis|Saint Louis|Kansas City|Salt Lake City|Sacramento|
    Oakland|Berkeley|Palo Alto|Mountain View|Brooklyn|Manhattan|Queens|Bronx|Honolulu|Anchorage|Charlotte|
    Raleigh|Richmond|Buffalo|Albany|Hartford|Providence|Toronto|Vancouver|Montreal|Ottawa|Calgary|Edmonton|
    Mexico City|Guadalajara|Cancun|Havana|London|Manchester|Liverpool|Birmingham|Leeds|Glasgow|Edinburgh|
    Bristol|Oxford|Cambridge|Dublin|Belfast|Cardiff|Paris|Lyon|Marseille|Nice|Bordeaux|Toulouse|Berlin|
    Munich|Hamburg|Frankfurt|Cologne|Stuttgart|Dresden|Leipzig|Vienna|Zurich|Geneva|Basel|Bern|Amsterdam|
    Rotterdam|Utrecht|The Hague|Brussels|Antwerp|Luxembourg|Copenhagen|Stockholm|Oslo|Helsinki|Reykjavik|
    Madrid|Barcelona|Valencia|Seville|Malaga|Bilbao|Lisbon|Porto|Rome|Milan|Naples|Florence|Venice|Turin|
    Bologna|Athens|Istanbul|Ankara|Prague|Warsaw|Krakow|Budapest|Bucharest|Sofia|Belgrade|Zagreb|Ljubljana|
    Bratislava|Tallinn|Riga|Vilnius|Kyiv|Kiev|Moscow|Saint Petersburg|St. Petersburg|Minsk|Tbilisi|Yerevan|
    Baku|Tel Aviv|Jerusalem|Beirut|Amman|Cairo|Dubai|Abu Dhabi|Doha|Riyadh|Tehran|Baghdad|Karachi|Lahore|
    Islamabad|Delhi|New Delhi|Mumbai|Bangalore|Bengaluru|Chennai|Kolkata|Hyderabad|Pune|Dhaka|Kathmandu|
    Colombo|Beijing|Shanghai|Shenzhen|Guangzhou|Hangzhou|Chengdu|Wuhan|Xi'an|Nanjing|Tianjin|Taipei|
    Tokyo|Osaka|Kyoto|Yokohama|Nagoya|Sapporo|Fukuoka|Hiroshima|Seoul|Busan|Pyongyang|Bangkok|Hanoi|
    Ho Chi Minh City|Saigon|Phnom Penh|Kuala Lumpur|Jakarta|Manila|Sydney|Melbourne|Brisbane|Perth|Adelaide|
    Auckland|Wellington|Nairobi|Lagos|Accra|Johannesburg|Cape Town|Casablanca|Marrakech|Tunis|Addis Ababa|
    Sao Paulo|São Paulo|Rio de Janeiro|Rio|Buenos Aires|Santiago|Lima|Bogota|Bogotá|Caracas|Quito|Montevideo|
    Medellin|Silicon Valley|Bay Area|Hollywood|Napa|Yosemite|Yellowstone|Grand Canyon|Central Park|
    Times Square|Golden Gate Bridge|Eiffel Tower|Big Ben|Mount Everest|Mount Fuji|Machu Picchu|Niagara Falls|
    Lake Tahoe|Disneyland|Disney World|Walt Disney World|JFK|LAX|SFO|Heathrow|Gatwick|LaGuardia|O'Hare|
    Schiphol"""
)

LOCATION_WORDS = COUNTRIES | US_STATES | CITIES

NATIONALITIES = _words(
    """American|British|English|Scottish|Welsh|Irish|Canadian|Mexican|Brazilian|Argentinian|Argentine|
    Chilean|Colombian|Peruvian|Cuban|French|German|Italian|Spanish|Portuguese|Dutch|Belgian|Swiss|Austrian|
    Swedish|Norwegian|Danish|Finnish|Icelandic|Polish|Czech|Slovak|Hungarian|Romanian|Bulgarian|Greek|
    Turkish|Russian|Ukrainian|Serbian|Croatian|Israeli|Lebanese|Egyptian|Moroccan|Nigerian|Kenyan|
    Ethiopian|Ghanaian|South African|Indian|Pakistani|Bangladeshi|Nepali|Sri Lankan|Chinese|Japanese|
    Korean|Vietnamese|Thai|Filipino|Indonesian|Malaysian|Singaporean|Australian|Kiwi|Persian|Iranian|Iraqi|
    Syrian|Arab|Arabic|Jewish|Muslim|Christian|Catholic|Buddhist|Hindu|European|Asian|African|Latino|
    Latina|Hispanic|Mediterranean|Scandinavian|Nordic|Caribbean|Texan|Californian|Parisian|Hawaiian|
    Cajun|Creole|Sicilian|Neapolitan|Tuscan|Bavarian|Cantonese|Szechuan|Sichuan"""
)

LANGUAGES = _words(
    """English|Spanish|French|German|Italian|Portuguese|Dutch|Swedish|Norwegian|Danish|Finnish|Icelandic|
    Polish|Czech|Slovak|Hungarian|Romanian|Bulgarian|Greek|Turkish|Russian|Ukrainian|Serbian|Croatian|
    Hebrew|Arabic|Persian|Farsi|Urdu|Hindi|Bengali|Punjabi|Tamil|Telugu|Marathi|Gujarati|Nepali|Chinese|
    Mandarin|Cantonese|Japanese|Korean|Vietnamese|Thai|Indonesian|Malay|Tagalog|Filipino|Swahili|Amharic|
    Yoruba|Zulu|Afrikaans|Latin|Esperanto|Catalan|Basque|Galician|Welsh|Gaelic|Irish|Estonian|Latvian|
    Lithuanian|Georgian|Armenian|Kazakh|Mongolian|ASL|Sign Language|American Sign Language"""
)

# A few hundred common given names (English-speaking countries plus frequent international ones).
FIRST_NAMES = _words(
    """Aaron Abby Abigail Adam Adrian Aiden Aisha Alan Albert Alex Alexa Alexander Alexandra Alexis Alice
    Alicia Alison Allison Amanda Amber Amelia Amir Amy Ana Andrea Andrew Andy Angela Angelina Anita Ann Anna
    Anne Annie Anthony Antonio Anya April Aria Ariana Arjun Arthur Ashley Audrey Austin Ava Avery Barbara
    Beatrice Bella Ben Benjamin Beth Betty Bianca Bill Billy Blake Bob Bobby Bonnie Brad Bradley Brandon Brenda
    Brian Brittany Brooke Bruce Bryan Caleb Cameron Camila Carl Carla Carlos Carmen Carol Caroline Carolyn
    Carter Casey Catherine Charles Charlie Charlotte Chen Chloe Chris Christian Christina Christine
    Christopher Cindy Claire Clara Claudia Cody Colin Connor Craig Cynthia Daisy Dan Dana Daniel Daniela
    Danielle Danny Dave David Dean Debbie Deborah Denise Dennis Derek Diana Diane Diego Dimitri Dominic Donald
    Donna Doris Dorothy Dylan Eddie Edward Elena Eli Elijah Elizabeth Ella Ellen Ellie Emily Emma Eric Erica
    Erik Erin Ethan Eva Evan Evelyn Fatima Felix Fiona Frank Freya Gabriel Gabriela Gabriella Gary George
    Georgia Gina Grace Greg Gregory Hailey Haley Hamza Hannah Harold Harper Harry Hassan Hazel Heather Helen
    Henry Hiroshi Holly Hugo Ian Igor Isaac Isabel Isabella Isabelle Ivan Jack Jackson Jacob Jade Jake James
    Jamie Jan Jane Janet Jasmine Jason Javier Jay Jayden Jean Jeff Jeffrey Jen Jenna Jennifer Jenny Jeremy
    Jerry Jess Jesse Jessica Jill Jim Jimmy Joan Joanna Joe Joel John Johnny Jon Jonathan Jordan Jorge Jose
    Joseph Josh Joshua Joy Juan Judith Judy Julia Julian Julie Justin Kai Karen Kate Katherine Kathleen Kathy
    Katie Kayla Keith Kelly Ken Kenji Kenneth Kevin Kim Kimberly Kyle Laura Lauren Layla Leah Lee Leo Leon
    Liam Lily Linda Lisa Logan Lorenzo Louis Louise Lucas Lucia Lucy Luis Luke Luna Lydia Madison Maggie Mai
    Marco Margaret Maria Mariana Marie Marina Mario Mark Martha Martin Mary Mason Matt Matthew Max Maya Megan
    Mei Melanie Melissa Mia Michael Michelle Miguel Mike Mila Miles Min Mohammed Mohammad Muhammad Molly
    Monica Nadia Nancy Naomi Natalie Nate Nathan Nicholas Nick Nicole Nina Noah Nora Oliver Olivia Omar Oscar
    Owen Pablo Pam Pamela Patricia Patrick Paul Paula Pedro Peter Petra Philip Phoebe Priya Rachel Rahul
    Ravi Raj Ralph Ramon Randy Ray Rebecca Richard Rick Riley Rita Rob Robert Robin Roger Ron Ronald Rosa
    Rose Ruby Ruth Ryan Sally Sam Samantha Samuel Sandra Sara Sarah Scarlett Scott Sean Sebastian Sergei Seth
    Shannon Sharon Sofia Sophia Sophie Stella Stephanie Stephen Steve Steven Susan Taylor Ted Teresa Terry
    Theo Thomas Tim Timothy Tina Todd Tom Tommy Tony Tracy Tyler Valentina Vanessa Victor Victoria Vincent
    Violet Wei Wendy Will William Xavier Yan Yuki Yusuf Zach Zachary Zara Zoe Zoey Zoë Jon Joanna Gina Jolene
    Deborah Calvin Dave Evan Andrew Audrey Nate James Maria John Tim Sam Joanna"""
)

TITLES = frozenset(
    {
        "Mr",
        "Mrs",
        "Ms",
        "Miss",
        "Dr",
        "Prof",
        "Professor",
        "Sir",
        "Madam",
        "Mx",
        "Uncle",
        "Aunt",
        "Auntie",
        "Grandma",
        "Grandpa",
        "Coach",
        "Captain",
        "Officer",
        "Judge",
        "Senator",
    }
)

COMPANIES = _words(
    """Google|Alphabet|Apple|Microsoft|Amazon|Meta|Facebook|Instagram|WhatsApp|Netflix|Tesla|SpaceX|Twitter|
    X Corp|LinkedIn|Uber|Lyft|Airbnb|Spotify|Shopify|Stripe|PayPal|Salesforce|Oracle|IBM|Intel|AMD|Nvidia|
    NVIDIA|Qualcomm|Cisco|Dell|HP|Lenovo|Samsung|Sony|LG|Huawei|Xiaomi|Alibaba|Tencent|Baidu|ByteDance|TikTok|
    Adobe|Atlassian|Slack|Zoom|Dropbox|GitHub|GitLab|Bitbucket|OpenAI|Anthropic|DeepMind|Mistral|Cohere|
    Hugging Face|Databricks|Snowflake|MongoDB Inc|Cloudflare|Vercel|Netlify|Heroku|DigitalOcean|Reddit|
    Pinterest|Snapchat|Discord|Twitch|YouTube|Walmart|Target|Costco|Starbucks|McDonald's|Nike|Adidas|IKEA|
    Coca-Cola|Pepsi|Disney|Pixar|Marvel|Warner Bros|HBO|BBC|CNN|NASA|ESA|WHO|UN|UNICEF|Red Cross|NHS|FBI|CIA|
    Boeing|Airbus|Ford|Toyota|Honda|BMW|Mercedes|Volkswagen|Audi|Porsche|Ferrari|Volvo|Siemens|Bosch|SAP|
    Philips|Nestle|Nestlé|Unilever|Deloitte|Accenture|McKinsey|KPMG|PwC|EY|Goldman Sachs|JPMorgan|
    JP Morgan|Morgan Stanley|Citi|Citibank|Wells Fargo|Barclays|HSBC|Visa|Mastercard|American Express|
    Whole Foods|Trader Joe's|Home Depot|Best Buy|eBay|Etsy|Yelp|Duolingo|Notion|Figma|Canva|Asana|Trello|
    Airtable|Zapier|Twilio|Datadog|Palantir|Intuit|Workday|ServiceNow|Infosys|Wipro|TCS|Accenture|Peloton|
    Patagonia|REI|Harvard|Stanford|MIT|Yale|Princeton|Berkeley|UCLA|Caltech|Oxford University|
    Cambridge University|Columbia|NYU|Cornell|ETH Zurich|EPFL|Sorbonne|Tsinghua|Peking University"""
)

# Technology names, case-sensitive surface forms. Multi-word names are matched as phrases.
TECH = _words(
    """Python|JavaScript|TypeScript|Java|Kotlin|Scala|Swift|Objective-C|Rust|Go|Golang|Ruby|Rails|
    Ruby on Rails|PHP|Perl|Haskell|Elixir|Erlang|Clojure|Lua|Julia|MATLAB|R|C|C++|C#|F#|Dart|Flutter|
    Zig|Nim|OCaml|Fortran|COBOL|Bash|Zsh|PowerShell|SQL|NoSQL|HTML|CSS|Sass|Tailwind|React|React Native|
    Vue|Vue.js|Angular|Svelte|Next.js|Nuxt|Node|Node.js|Deno|Bun|Express|Django|Flask|FastAPI|Spring|
    Spring Boot|Laravel|Symfony|.NET|ASP.NET|Unity|Unreal|Unreal Engine|Godot|NumPy|Numpy|Pandas|SciPy|
    PyTorch|TensorFlow|Keras|JAX|scikit-learn|Jupyter|LangChain|LlamaIndex|PostgreSQL|Postgres|MySQL|
    MariaDB|SQLite|MongoDB|Redis|Cassandra|Elasticsearch|OpenSearch|Kafka|RabbitMQ|Spark|Hadoop|Airflow|
    dbt|Snowflake|BigQuery|Redshift|DynamoDB|Firebase|Supabase|Docker|Kubernetes|K8s|Helm|Terraform|
    Ansible|Puppet|Chef|Jenkins|CircleCI|Travis|GitHub Actions|Git|Mercurial|SVN|Linux|Ubuntu|Debian|
    Fedora|Arch|Arch Linux|CentOS|Red Hat|macOS|MacOS|OS X|Windows|iOS|Android|ChromeOS|FreeBSD|Nginx|
    Apache|AWS|Amazon Web Services|EC2|S3|Lambda|GCP|Google Cloud|Azure|Heroku|Vim|Neovim|Emacs|VS Code|
    VSCode|Visual Studio|Visual Studio Code|IntelliJ|PyCharm|WebStorm|Xcode|Eclipse|Sublime Text|Atom|
    Jira|Confluence|Slack|Notion|Obsidian|Figma|Photoshop|Illustrator|Lightroom|Premiere|Final Cut|
    Blender|AutoCAD|Excel|Word|PowerPoint|Outlook|Google Docs|Google Sheets|Gmail|ChatGPT|GPT-4|GPT-4o|
    Claude|Gemini|Llama|Copilot|GitHub Copilot|Cursor|Postman|GraphQL|REST|gRPC|WebAssembly|Wasm|
    Raspberry Pi|Arduino|Excel|Tableau|Power BI|Looker|Grafana|Prometheus|Kibana|Splunk|Sentry|Webpack|
    Vite|Babel|ESLint|Prettier|Jest|Pytest|pytest|Selenium|Playwright|Cypress|Poetry|Conda|Anaconda|pip|
    npm|Yarn|pnpm|Homebrew|Bluetooth|Wi-Fi|WiFi|LaTeX|Markdown|JSON|YAML|XML|CUDA|OpenGL|Vulkan|Qt|GTK|
    Electron|Tauri|Streamlit|Gradio|Hugging Face|Transformers|OpenCV|Matplotlib|Seaborn|Plotly|D3|
    Three.js|jQuery|Bootstrap|Redux|GraphQL|Prisma|SQLAlchemy|Alembic|Celery|Pydantic|Spotify|Netflix|
    iPhone|iPad|MacBook|MacBook Pro|MacBook Air|iMac|Apple Watch|AirPods|Pixel|Galaxy|Kindle|PlayStation|
    PS5|Xbox|Nintendo Switch|Switch|Steam Deck|Minecraft|Fortnite|Zelda|Pokemon|Pokémon|Instagram|TikTok|
    WhatsApp|Telegram|Signal|Zoom|Teams|Microsoft Teams|Discord|Reddit|YouTube|Tinder|Strava|Duolingo|
    Uber|Excel"""
)

# Products among TECH (the rest is TECHNOLOGY).
PRODUCTS = _words(
    """iPhone|iPad|MacBook|MacBook Pro|MacBook Air|iMac|Apple Watch|AirPods|Pixel|Galaxy|Kindle|PlayStation|
    PS5|Xbox|Nintendo Switch|Switch|Steam Deck|Minecraft|Fortnite|Zelda|Pokemon|Pokémon|Instagram|TikTok|
    WhatsApp|Telegram|Signal|Zoom|Teams|Microsoft Teams|Discord|Reddit|YouTube|Tinder|Strava|Duolingo|Uber|
    Spotify|Netflix|Excel|Word|PowerPoint|Outlook|Google Docs|Google Sheets|Gmail|ChatGPT|Notion|Obsidian|
    Figma|Photoshop|Illustrator|Lightroom|Premiere|Final Cut|Blender|Jira|Confluence|Slack|Raspberry Pi|
    Arduino|Tableau|Power BI|Copilot|GitHub Copilot|Cursor|Postman|Claude|Gemini|Llama|GPT-4|GPT-4o"""
)

# Technology that is unambiguous in lower case (matched case-insensitively): canonical surface form.
TECH_CI: dict[str, str] = {
    t.lower(): t
    for t in words("""Python JavaScript TypeScript Kotlin Scala Golang PHP Haskell Erlang Clojure MATLAB Fortran
    COBOL PowerShell NoSQL HTML CSS Django FastAPI Laravel NumPy SciPy PyTorch TensorFlow Keras
    scikit-learn Jupyter LangChain LlamaIndex PostgreSQL Postgres MySQL MariaDB SQLite MongoDB Redis 
    Elasticsearch RabbitMQ Hadoop BigQuery DynamoDB Firebase Supabase Docker Kubernetes
    K8s Terraform Ansible Linux Ubuntu Debian CentOS macOS iOS Android Nginx AWS GCP Neovim
    Emacs VSCode IntelliJ PyCharm Xcode GraphQL gRPC WebAssembly Arduino Grafana Webpack ESLint
    Pytest Conda CUDA OpenCV Matplotlib Streamlit Gradio SQLAlchemy
    Pydantic ChatGPT GitHub GitLab JSON YAML Node.js Vue.js Next.js Three.js jQuery Svelte Deno 
    Photoshop Figma Duolingo Spotify Netflix iPhone iPad MacBook Minecraft YouTube WhatsApp Instagram TikTok
    Strava""")
}
TECH_CI["javascript"] = "JavaScript"
TECH_CI["vs code"] = "VS Code"
TECH_CI["visual studio code"] = "Visual Studio Code"
TECH_CI["c++"] = "C++"
TECH_CI["c#"] = "C#"

ORG_SUFFIXES = words(
    """Corp Corp. Corporation Inc Inc. Incorporated Ltd Ltd. Limited LLC LLP PLC GmbH AG SA SAS BV Co Co. Company
    Companies University College Institute Academy School Bank Group Labs Lab Laboratories Technologies Tech
    Systems Solutions Software Foundation Association Society Council Committee Hospital Clinic Agency
    Department Ministry Studio Studios Partners Holdings Airlines Airways Motors Club Team Federation Union
    League Press Media Network Networks Industries Enterprises Ventures Capital Consulting Services Bakery Cafe
    Café Restaurant Bistro Diner Pizzeria Brewery Gym Church Library Orchestra Band Choir Trust Fund Charity
    Collective Institute Inc Center Centre"""
)
ORG_HEADS = frozenset(
    {
        "University",
        "College",
        "Institute",
        "Bank",
        "Academy",
        "Department",
        "Ministry",
        "School",
        "Museum",
        "Church",
        "Bureau",
        "Order",
        "Society",
        "Federation",
        "Union",
        "League",
        "House",
    }
)

LOCATION_SUFFIXES = words(
    """City Town Village County Province State Street St St. Avenue Ave Ave. Road Rd Boulevard Blvd Lane Drive
    Way Square Plaza Park Lake River Mountain Mountains Mount Mt Hill Hills Beach Bay Island Islands Coast
    Valley Canyon Desert Forest Falls Peninsula Harbor Harbour Airport Station Bridge Tower Castle Palace
    Cathedral Museum Gallery Zoo Stadium Arena Mall Market Garden Gardens Trail Springs Heights District
    Quarter Village Shore Reef Glacier Volcano Sea Ocean Gulf Strait Canal Pier"""
)
LOCATION_HEADS = frozenset(
    {
        "Mount",
        "Mt",
        "Lake",
        "Lac",
        "Port",
        "Fort",
        "Cape",
        "Isle",
        "Saint",
        "San",
        "Santa",
        "St",
        "St.",
        "Los",
        "Las",
        "New",
        "North",
        "South",
        "East",
        "West",
        "Upper",
        "Lower",
    }
)

EVENT_SUFFIXES = words(
    """Festival Fest Conference Summit Con Expo Fair Championship Championships Cup Olympics Games Marathon
    Tournament Open Awards Gala Parade Carnival Hackathon Week Ceremony Concert Tour Symposium Workshop
    Meetup Convention Show"""
)
EVENT_NAMES = _words(
    """Christmas|Christmas Eve|Thanksgiving|Halloween|Easter|New Year|New Year's|New Year's Eve|New Year's Day|
    Hanukkah|Diwali|Ramadan|Eid|Passover|Lunar New Year|Chinese New Year|Valentine's Day|Mother's Day|
    Father's Day|Independence Day|Fourth of July|Labor Day|Memorial Day|Super Bowl|World Cup|Olympics|
    Pride|Pride Month|Black Friday|Cyber Monday|Oktoberfest|Coachella|Burning Man|Comic-Con|PyCon|WWDC|CES|
    Mardi Gras|Carnival|Yom Kippur|Rosh Hashanah|Holi|Kwanzaa|St. Patrick's Day|Boxing Day"""
)

# Multi-word names from every list, by number of tokens, for phrase matching.
MULTIWORD: frozenset[str] = frozenset(
    n for n in (COUNTRIES | US_STATES | CITIES | COMPANIES | TECH | EVENT_NAMES | LANGUAGES) if " " in n
)
