// Customer handbook site (help.stowhaven.example). Built by the web team; the bot reads docs/ only.
module.exports = {
  title: 'Stowhaven Help',
  url: 'https://help.stowhaven.example',
  baseUrl: '/',
  presets: [['classic', { docs: { sidebarPath: require.resolve('./sidebars.js') }, blog: false }]],
};
